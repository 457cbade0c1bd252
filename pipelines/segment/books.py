"""Books and plain text: Project Gutenberg header/footer removal, hard-wrapped lines re-joined,
chapter headings, and the evidence that tells a book (one document of blank-line separated
paragraphs) from a file of chapters (one document per heading) and from blank-line separated
documents."""

from __future__ import annotations

import re

_START = re.compile(
    r"^\s*\*{3}\s*START OF (?:THIS|THE) PROJECT GUTENBERG.*$|^\s*\*END\*THE SMALL PRINT.*$",
    re.IGNORECASE | re.MULTILINE,
)
_END = re.compile(
    r"^\s*(?:\*{3}\s*END OF (?:THIS|THE) PROJECT GUTENBERG|End of (?:the )?Project Gutenberg"
    r"|End of Project Gutenberg's|End of The Project Gutenberg).*$",
    re.IGNORECASE | re.MULTILINE,
)
_BLANK_LINES = re.compile(r"\n[ \t]*\n\s*")
_NUMBERED_HEADING = re.compile(
    r"(?:chapter|book|volume|part|act|scene|canto|section)\s+(?:[ivxlcdm]+|\d+|[a-z]+)\.?",
    re.IGNORECASE,
)


def strip_gutenberg(text: str) -> str:
    """The book's text without the Project Gutenberg licence header and footer (if it has them)."""
    start = _START.search(text)
    if start:
        text = text[start.end() :]
    end = _END.search(text)
    if end:
        text = text[: end.start()]
    return text


def join_wrapped_lines(lines: list[str]) -> str:
    """One paragraph from hard-wrapped lines: joined by spaces, but without one after a dash
    break."""
    joined = ""
    for line in (line.strip() for line in lines):
        if not line:
            continue
        if joined and not joined.endswith("--"):
            joined += " "
        joined += line
    return joined


_CHAPTER_NUMBER = re.compile(  # Arabic, or a well-formed Roman numeral ('IV', not 'DID')
    r"(?:\d{1,4}|(?=[MDCLXVI])M{0,3}(?:CM|CD|D?C{0,3})(?:XC|XL|L?X{0,3})(?:IX|IV|V?I{0,3}))[.:]?"
)
_SECTION_SIGN = re.compile(r"§{1,2}\s*\d{1,4}[.:]?")
_NAME_CONNECTORS = frozenset({"of", "the", "and"})
MAX_CHAPTER_HEADING_CHARS = 48


def is_chapter_heading(line: str) -> bool:
    """Whether a line is only a chapter heading: '§ 12', or one to four capitalised words
    ('Chapter', 'Genesis', '1 Kings', 'Song of Solomon') then a number or Roman numeral
    ('Chapter IV', 'Psalm 119.')."""
    line = line.strip()
    if len(line) > MAX_CHAPTER_HEADING_CHARS:
        return False
    if _SECTION_SIGN.fullmatch(line):
        return True
    *name, number = line.split() or [""]
    if name and len(name[0]) == 1 and name[0].isdigit():  # '1 Kings 3'
        name = name[1:]
    if not 1 <= len(name) <= 4 or not name[0][:1].isupper():
        return False
    if not _CHAPTER_NUMBER.fullmatch(number):
        return False
    return all(
        word.rstrip(".'’").replace("-", "").isalpha()
        and (word[:1].isupper() or word in _NAME_CONNECTORS)
        for word in name
    )


def chapter_headings(lines: list[str]) -> list[str]:
    """The chapter headings among `lines` that stand alone before a block: the first line or after a
    blank line, and followed by a line of text that is not itself a heading."""
    found = []
    for index, line in enumerate(lines):
        if (index == 0 or not lines[index - 1].strip()) and is_chapter_heading(line):
            following = next((text for text in lines[index + 1 : index + 3] if text.strip()), "")
            if following and not is_chapter_heading(following):
                found.append(line.strip())
    return found


def is_heading(paragraph: str) -> bool:
    """Short lines without lower-case letters ('VOLUME II', 'ETYMOLOGY.') or numbered ('Chapter
    12')."""
    if _NUMBERED_HEADING.fullmatch(paragraph):
        return True
    return len(paragraph) <= 80 and not any(character.islower() for character in paragraph)


def book_paragraphs(text: str) -> list[str]:
    """Paragraphs (blank-line separated, wrapped lines re-joined) of a book, headings dropped."""
    text = strip_gutenberg(text.replace("\r\n", "\n").replace("\r", "\n"))
    paragraphs = []
    for block in _BLANK_LINES.split(text):
        paragraph = join_wrapped_lines(block.split("\n"))
        if paragraph and not is_heading(paragraph):
            paragraphs.append(paragraph)
    return paragraphs


# Average characters per blank-line block from which the blocks are documents, not paragraphs: book
# paragraphs average a few hundred characters (the shared Gutenberg books: 190 to 790).
DOCUMENT_BLOCK_CHARS = 4000
_SENTENCE_END = re.compile(r"[.!?:;][\"'”’)\]]*$")


def is_hard_wrapped(lines: list[str]) -> bool:
    """Whether non-blank `lines` are hard-wrapped prose: nearly all at most 80 characters and at
    least a third of them ending mid-sentence (one-paragraph-per-line text ends almost every line a
    sentence)."""
    if len(lines) < 4:
        return False
    short = sum(len(line) <= 80 for line in lines) / len(lines)
    open_ended = sum(not _SENTENCE_END.search(line.rstrip()) for line in lines[:-1]) / (
        len(lines) - 1
    )
    return short >= 0.95 and open_ended >= 1 / 3


def unwrap(lines: list[str]) -> list[str]:
    """Paragraphs of hard-wrapped `lines` without blank lines between paragraphs: a line ends its
    paragraph when it ends a sentence well short of the wrap width, or the next line is indented."""
    width = max(len(line.rstrip()) for line in lines)
    paragraphs, current = [], []
    for line, following in zip(lines, [*lines[1:], ""]):
        current.append(line)
        ends = _SENTENCE_END.search(line.rstrip()) and len(line.rstrip()) < 0.8 * width
        if ends or not following or (following[:1].isspace() and not line[:1].isspace()):
            paragraphs.append(join_wrapped_lines(current))
            current = []
    return [paragraph for paragraph in paragraphs if paragraph]


# Chapter headings standing alone before a block (see `chapter_headings`) in the sniffed sample
# (input_streams.SNIFF_BYTES, 64 KB) from which a text file is a file of short chapters, one
# document each (scripture, statutes: a few KB a chapter); a novel's chapters (10 to 30 KB, 3 or 4
# headings in the shared books' first 64 KB) leave it one book, unless `--format chapters`.
MIN_CHAPTER_HEADINGS = 8


def text_kind(sample: str, complete: bool) -> tuple[str, str]:
    """('books', 'chapters' or 'text', the evidence) for a text file from its first characters
    (`complete`: all of it).

    A Project Gutenberg header decides for a book. Otherwise MIN_CHAPTER_HEADINGS or more chapter
    headings alone before a block make a file of short chapters. Otherwise hard-wrapped lines in
    blank-line blocks of paragraph size are a book; blocks of DOCUMENT_BLOCK_CHARS or more on
    average (an unfinished last block counted with what the sample holds of it) are documents; lines
    that are not hard-wrapped are one paragraph per line.
    """
    if "project gutenberg" in sample.lower():
        return "books", "a Project Gutenberg header"
    headings = chapter_headings(sample.split("\n") if complete else sample.split("\n")[:-1])
    if len(headings) >= MIN_CHAPTER_HEADINGS:
        where = "" if complete else f" in the first {len(sample.encode()) >> 10} KB"
        return "chapters", (
            f"{len(headings)} chapter headings alone before a block{where} "
            f"({', '.join(headings[:2])}, …): short chapters"
        )
    lines = [line for line in sample.split("\n") if line.strip()]
    if not is_hard_wrapped(lines if complete else lines[:-1]):
        count = f"{len(lines)} line" + ("s" if len(lines) != 1 else "")
        return "text", f"{count}, not hard-wrapped: one paragraph per line"
    blocks = [block for block in _BLANK_LINES.split(sample) if block.strip()]
    per_block = sum(len(block) for block in blocks) / len(blocks)
    evidence = f"hard-wrapped lines in blank-line blocks of {per_block:,.0f} characters on average"
    if not complete:
        evidence += f" in the first {len(sample.encode()) >> 10} KB"
    if per_block >= DOCUMENT_BLOCK_CHARS:
        return "text", evidence + ": too long for a book's paragraphs"
    return "books", evidence + ": paragraph-sized"
