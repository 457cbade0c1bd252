"""Real text rearranged the way domain corpora come (for the segmentation tests and benchmarks)."""

from __future__ import annotations

import itertools
import re
import textwrap

from pipelines.segment import books

_SENTENCE_GAP = re.compile(r"(?<=[.!?]) (?=[A-Z])")


def source_paragraphs(book: str) -> list[str]:
    """A book's paragraphs of more than 200 characters, whitespace collapsed."""
    return [" ".join(p.split()) for p in books.book_paragraphs(book) if len(p) > 200]


def _numbered(paragraph: str, numbers: itertools.count) -> str:
    return _SENTENCE_GAP.sub(lambda _: f" {next(numbers)} ", paragraph)


def numbered_chapters(
    book: str, chapters: int, paragraphs_per_chapter: int, width: int = 72
) -> str:
    """A domain-style corpus from a book's own paragraphs: `chapters` documents separated by blank
    lines, each a run of hard-wrapped paragraphs (no blank line between them) whose sentences carry
    inline verse/clause numbers, as in legal and religious text ("… was approved. 12 The committee
    …"). Uses the first chapters * paragraphs_per_chapter of `source_paragraphs(book)`.
    """
    paragraphs = source_paragraphs(book)
    documents = []
    for index in range(chapters):
        numbers = itertools.count(2)
        chapter = paragraphs[index * paragraphs_per_chapter : (index + 1) * paragraphs_per_chapter]
        documents.append("\n".join(textwrap.fill(_numbered(p, numbers), width) for p in chapter))
    return "\n\n".join(documents) + "\n"


def headed_chapters(
    book: str,
    chapters: int,
    paragraphs_per_chapter: int,
    heading: str = "Genesis {}",
    width: int = 72,
) -> str:
    """A single-file corpus of chapters as scripture comes: a title line, then per chapter a heading
    alone on its line (`heading` with the chapter's number), a blank line, and blank-line separated
    hard-wrapped paragraphs whose sentences are numbered verses ("1 It was … 2 Then …").
    Uses the first chapters * paragraphs_per_chapter of `source_paragraphs(book)`."""
    paragraphs = source_paragraphs(book)
    parts = ["THE BOOK OF CHAPTERS"]
    for index in range(chapters):
        numbers = itertools.count(1)
        chapter = paragraphs[index * paragraphs_per_chapter : (index + 1) * paragraphs_per_chapter]
        verses = [
            _numbered(f"{next(numbers)} {p}" if not n else p, numbers)
            for n, p in enumerate(chapter)
        ]
        blocks = "\n\n".join(textwrap.fill(verse, width) for verse in verses)
        parts.append(heading.format(index + 1) + "\n\n" + blocks)
    return "\n\n".join(parts) + "\n"
