"""Reading one input file as raw documents: format detection and streaming readers.

Every reader takes a binary stream and yields `RawDocument`s one at a time (a Wikipedia dump is
never held whole; a book is one document, a file of chapters one per chapter heading); lines and
documents of text are bounded (input_streams.MAX_LINE_BYTES, MAX_DOCUMENT_CHARS). Bad input raises
`input_streams.BadInput` with the reason.
"""

from __future__ import annotations

import itertools
import json
import logging
import re
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from dataclasses import dataclass
from typing import IO, TYPE_CHECKING, Literal

from pipelines.segment import books, wikipedia, wikitext
from pipelines.segment.input_streams import (
    SNIFF_BYTES,
    BadInput,
    archive_kind,
    compression_fault,
    decoded_lines,
    open_counting,
)

if TYPE_CHECKING:  # the type only: pipelines.common.runner loads Beam
    from pipelines.common.runner import Counter

Format = Literal["auto", "wikipedia", "books", "chapters", "text", "jsonl"]
FORMAT_NAMES = {
    "wikipedia": "a Wikipedia dump",
    "books": "one book",
    "chapters": "one document per chapter",
    "text": "blank-line separated documents",
    "jsonl": "JSONL",
}
logger = logging.getLogger(__name__)
# Longer text documents and books are cut into parts (each its own document) so that no single
# element of the pipeline is unbounded; every shared Gutenberg book is far below it.
MAX_DOCUMENT_CHARS = 4 << 20
# What json.loads makes of a \ud800 escape without its pair: a str that no UTF-8 encoder takes
# (Beam's coders, the spill files), so such a record is bad where it is decoded.
_SURROGATE = re.compile("[\ud800-\udfff]")


@dataclass(frozen=True)
class RawDocument:
    """A document before cleaning: `text` is wikitext for the 'wikipedia' format, plain text
    otherwise."""

    format: str
    doc_id: str
    text: str


def detect_format(path: str, head: bytes) -> tuple[str, str]:
    """(format, the evidence) of a file from its name and first bytes (rules in docs/segment.md)."""
    name = path.lower().removesuffix(".bz2").removesuffix(".gz")
    if name.endswith(".xml"):
        return "wikipedia", "an .xml name"
    if name.endswith((".jsonl", ".ndjson", ".json")):
        return "jsonl", "a .jsonl/.ndjson/.json name"
    start = head.lstrip()
    if start.startswith(b"<mediawiki") or (
        start.startswith(b"<?xml") and b"<mediawiki" in start[:2000]
    ):
        return "wikipedia", "a <mediawiki> root element"
    if start.startswith(b"{"):
        return "jsonl", "a JSON object at the start"
    sample = head.decode("utf-8", errors="replace")
    return books.text_kind(sample, complete=len(head) < SNIFF_BYTES)


def read_wikipedia(stream: IO[bytes], on_error: str, inc: Counter) -> Iterator[RawDocument]:
    """Main-namespace article pages, namespace prefixes of links made canonical (see
    wikipedia.SiteInfo).

    Redirects, other namespaces and disambiguation pages are counted; a page whose `<ns>` is not a
    number fails (naming it) or, with on_error='skip', is counted as a bad record.
    """
    try:
        for page in wikipedia.iter_pages(stream):
            inc("documents_in", 1)
            inc("characters_in", len(page.text))
            if page.problem:
                if on_error == "fail":
                    raise BadInput(f"page {page.page_id} ({page.title!r}): {page.problem}")
                inc("skipped_bad_record", 1)
            elif page.namespace != wikipedia.MAIN_NAMESPACE:
                inc("skipped_namespace", 1)
            elif wikipedia.is_redirect(page):
                inc("skipped_redirect", 1)
            elif wikipedia.is_disambiguation(page):
                inc("skipped_disambiguation", 1)
            else:
                yield RawDocument("wikipedia", page.page_id, page.site.canonical_links(page.text))
    except ET.ParseError as error:
        raise BadInput(f"malformed XML ({error})") from None


def _document(fmt: str, index: int, lines: list[str], inc: Counter) -> RawDocument:
    text = "\n".join(lines)
    inc("documents_in", 1)
    inc("characters_in", len(text))
    return RawDocument(fmt, str(index), text)


def read_book(
    stream: IO[bytes], fallback_encoding: str | None, inc: Counter, chapters: bool = False
) -> Iterator[RawDocument]:
    """The whole file as one book or, with `chapters`, one book per chapter: a document starts at
    each chapter heading on a line of its own after a blank line (books.is_chapter_heading; the
    heading is not part of the text, text before the first heading is a document of its own, a
    heading with no text before the next is dropped). A book longer than MAX_DOCUMENT_CHARS is cut
    into parts.

    A part ends at the first blank line (paragraph break) after MAX_DOCUMENT_CHARS, or at the
    latest at twice that; each extra part is counted as `documents_cut`.
    """
    lines: list[str] = []
    size, index, previous = 0, 0, ""
    for line in decoded_lines(stream, fallback_encoding, inc):
        heading = chapters and not previous.strip() and books.is_chapter_heading(line)
        previous = line
        cut = size >= MAX_DOCUMENT_CHARS and (not line.strip() or size >= 2 * MAX_DOCUMENT_CHARS)
        if heading or cut:
            if any(text.strip() for text in lines):
                yield _document("books", index, lines, inc)
                if not heading:  # a chapter is a document, not a cut
                    inc("documents_cut", 1)
                index += 1
            lines, size = [], 0
            if heading:
                continue
        lines.append(line)
        size += len(line) + 1
    if index == 0 or any(text.strip() for text in lines):
        yield _document("books", index, lines, inc)


def read_text(
    stream: IO[bytes], fallback_encoding: str | None, inc: Counter
) -> Iterator[RawDocument]:
    """Documents separated by blank lines; each line is a paragraph.

    A document longer than MAX_DOCUMENT_CHARS is cut into parts between lines (`documents_cut`).
    """
    lines: list[str] = []
    size, index = 0, 0
    for line in itertools.chain(decoded_lines(stream, fallback_encoding, inc), [""]):
        if line.strip() and size < MAX_DOCUMENT_CHARS:
            lines.append(line)
            size += len(line) + 1
            continue
        if lines:
            yield _document("text", index, lines, inc)
            index, lines, size = index + 1, [], 0
        if line.strip():  # the document went on past the bound
            inc("documents_cut", 1)
            lines, size = [line], len(line) + 1


def read_jsonl(
    stream: IO[bytes], fallback_encoding: str | None, field: str, on_error: str, inc: Counter
) -> Iterator[RawDocument]:
    """One `{"text": ...}` object per line; a bad line fails or (on_error='skip') is counted."""
    for number, line in enumerate(decoded_lines(stream, fallback_encoding, inc, None), start=1):
        if not line.strip():
            continue
        inc("documents_in", 1)
        try:
            record = json.loads(line)
            text = record[field]
            if not isinstance(text, str):
                raise TypeError(f'"{field}" is {type(text).__name__}, not a string')
            if surrogate := _SURROGATE.search(text):
                raise ValueError(
                    f'"{field}" holds a lone surrogate escape \\u{ord(surrogate[0]):04x} at '
                    f"character {surrogate.start() + 1}, not a Unicode character"
                )
        except (ValueError, KeyError, TypeError) as error:
            reason = f"missing {error}" if isinstance(error, KeyError) else str(error)
            if on_error == "fail":
                raise BadInput(f"line {number}: bad JSON record ({reason})") from None
            inc("skipped_bad_record", 1)
            continue
        inc("characters_in", len(text))
        yield RawDocument("jsonl", str(number), text)


def read_documents(
    path: str,
    raw: IO[bytes],
    fmt: str,
    *,
    fallback_encoding: str | None = None,
    jsonl_field: str = "text",
    on_error: str = "fail",
    inc: Counter,
) -> Iterator[RawDocument]:
    """Stream the raw documents of one file. Raises BadInput (or the stream's OSError/EOFError)."""
    stream, head = open_counting(path, raw)
    if fmt == "auto":
        fmt, evidence = detect_format(path, head)
        logger.info("%s: read as %s (%s)", path, FORMAT_NAMES[fmt], evidence)
    inc(f"files_{fmt}", 1)
    if fmt == "wikipedia":
        documents = read_wikipedia(stream, on_error, inc)
    elif fmt in ("books", "chapters"):
        documents = read_book(stream, fallback_encoding, inc, chapters=fmt == "chapters")
    elif fmt == "text":
        documents = read_text(stream, fallback_encoding, inc)
    else:
        documents = read_jsonl(stream, fallback_encoding, jsonl_field, on_error, inc)
    try:
        yield from documents
    except BadInput:
        # Corrupt compressed blocks decompress to garbage before their checksum is verified, so the
        # parser may fail first: a compression fault found soon after is the real reason.
        if archive_kind(path):
            fault = compression_fault(stream)
            if fault is not None:
                raise fault from None
        raise
    inc("bytes_in", stream.bytes_read)


def raw_paragraphs(document: RawDocument) -> list[str]:
    """The document's paragraphs before normalisation, by format (text lines re-joined if
    hard-wrapped)."""
    if document.format == "wikipedia":
        return wikitext.wikitext_to_paragraphs(document.text)
    if document.format == "books":
        return books.book_paragraphs(document.text)
    lines = [line for line in document.text.split("\n") if line.strip()]
    return books.unwrap(lines) if books.is_hard_wrapped(lines) else lines
