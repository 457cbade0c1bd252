"""Books as plain text: Project Gutenberg header/footer removal and re-joining of hard-wrapped lines."""

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
        text = text[start.end():]
    end = _END.search(text)
    if end:
        text = text[: end.start()]
    return text


def join_wrapped_lines(lines: list[str]) -> str:
    """One paragraph from hard-wrapped lines: joined by spaces, but without one after a dash break."""
    joined = ""
    for line in (line.strip() for line in lines):
        if not line:
            continue
        if joined and not joined.endswith("--"):
            joined += " "
        joined += line
    return joined


def is_heading(paragraph: str) -> bool:
    """Short lines without lower-case letters ('VOLUME II', 'ETYMOLOGY.') or numbered ('Chapter 12')."""
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


def looks_like_book(sample: str) -> bool:
    """Whether a text sample is a hard-wrapped book rather than one-paragraph-per-line text.

    A Gutenberg marker decides; otherwise most lines are at most 80 characters and paragraphs span
    several lines.
    """
    if "project gutenberg" in sample.lower():
        return True
    lines = [line for line in sample.split("\n") if line.strip()]
    if len(lines) < 10:
        return False
    short = sum(len(line) <= 80 for line in lines) / len(lines)
    blocks = [block for block in _BLANK_LINES.split(sample) if block.strip()]
    return short >= 0.95 and len(lines) / max(len(blocks), 1) >= 2
