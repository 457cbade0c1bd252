"""Reading one input file as raw documents: decompression, format detection, streaming readers.

Every reader takes a binary stream and yields `RawDocument`s one at a time (a Wikipedia dump is
never held whole; a book is one document). Bad input raises `BadInput` with the reason.
"""

from __future__ import annotations

import bz2
import gzip
import io
import json
import xml.etree.ElementTree as ET
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import IO, Literal

from pipelines import books, wikipedia
from pipelines.runner import Counter

Format = Literal["auto", "wikipedia", "books", "text", "jsonl"]
SNIFF_BYTES = 1 << 16
# How far past a parse error a compressed file is read to find a corrupt block (bz2 blocks hold
# at most 900 kB before run-length encoding).
FAULT_CHECK_BYTES = 16 << 20


class BadInput(ValueError):
    """A file that cannot be read as its format; the message is the reason."""


@dataclass(frozen=True)
class RawDocument:
    """A document before cleaning: `text` is wikitext for the 'wikipedia' format, plain text otherwise."""

    format: str
    doc_id: str
    text: str


class _CountingReader(io.RawIOBase):
    """A readable stream that starts with `head` (already read) and counts the bytes it serves."""

    def __init__(self, head: bytes, stream: IO[bytes]):
        self._head, self._stream, self.bytes_read = head, stream, 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        if self._head:
            size = min(len(buffer), len(self._head))
            buffer[:size], self._head = self._head[:size], self._head[size:]
        else:
            data = self._stream.read(len(buffer))
            size = len(data)
            buffer[:size] = data
        self.bytes_read += size
        return size


def decompressed(path: str, raw: IO[bytes]) -> IO[bytes]:
    """The decompressed byte stream of `raw`, by the file name's extension (.bz2, .gz)."""
    if path.endswith(".bz2"):
        return bz2.BZ2File(raw)
    if path.endswith(".gz"):
        return gzip.GzipFile(fileobj=raw)
    return raw


def open_counting(path: str, raw: IO[bytes]) -> tuple[_CountingReader, bytes]:
    """(stream, first bytes): the decompressed stream of a file, refusing an empty one."""
    stream = decompressed(path, raw)
    head = stream.read(SNIFF_BYTES)
    if not head:
        raise BadInput("empty file")
    return _CountingReader(head, stream), head


def detect_format(path: str, head: bytes) -> str:
    """The format of a file from its name and first bytes (see docs/segment.md for the rules)."""
    name = path.lower().removesuffix(".bz2").removesuffix(".gz")
    if name.endswith(".xml"):
        return "wikipedia"
    if name.endswith((".jsonl", ".ndjson", ".json")):
        return "jsonl"
    start = head.lstrip()
    if start.startswith(b"<mediawiki") or (start.startswith(b"<?xml") and b"<mediawiki" in start[:2000]):
        return "wikipedia"
    if start.startswith(b"{"):
        return "jsonl"
    sample = head.decode("utf-8", errors="replace")
    return "books" if books.looks_like_book(sample) else "text"


def decoded_lines(stream: IO[bytes], fallback_encoding: str | None, inc: Counter) -> Iterator[str]:
    """Lines of a byte stream decoded as UTF-8 (or `fallback_encoding`, counted), without newlines."""
    for number, line in enumerate(io.BufferedReader(stream, 1 << 20), start=1):
        try:
            text = line.decode("utf-8")
        except UnicodeDecodeError as error:
            if fallback_encoding is None:
                raise BadInput(
                    f"line {number}: not UTF-8 (byte {line[error.start]:#04x} at column {error.start + 1}); "
                    "set fallback_encoding to read such files"
                ) from None
            text = line.decode(fallback_encoding, errors="replace")
            inc("lines_fallback_encoding", 1)
        yield text.rstrip("\r\n")


def read_wikipedia(stream: IO[bytes], on_error: str, inc: Counter) -> Iterator[RawDocument]:
    """Main-namespace article pages, namespace prefixes of links made canonical (see wikipedia.SiteInfo).

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


def read_book(stream: IO[bytes], fallback_encoding: str | None, inc: Counter) -> Iterator[RawDocument]:
    """The whole file as one book."""
    text = "\n".join(decoded_lines(stream, fallback_encoding, inc))
    inc("documents_in", 1)
    inc("characters_in", len(text))
    yield RawDocument("books", "0", text)


def read_text(stream: IO[bytes], fallback_encoding: str | None, inc: Counter) -> Iterator[RawDocument]:
    """Documents separated by blank lines; each line is a paragraph."""
    lines: list[str] = []
    index = 0
    for line in [*decoded_lines(stream, fallback_encoding, inc), ""]:
        if line.strip():
            lines.append(line)
        elif lines:
            text = "\n".join(lines)
            inc("documents_in", 1)
            inc("characters_in", len(text))
            yield RawDocument("text", str(index), text)
            index, lines = index + 1, []


def read_jsonl(
    stream: IO[bytes], fallback_encoding: str | None, field: str, on_error: str, inc: Counter
) -> Iterator[RawDocument]:
    """One `{"text": ...}` object per line; a bad line fails or (on_error='skip') is counted."""
    for number, line in enumerate(decoded_lines(stream, fallback_encoding, inc), start=1):
        if not line.strip():
            continue
        inc("documents_in", 1)
        try:
            record = json.loads(line)
            text = record[field]
            if not isinstance(text, str):
                raise TypeError(f'"{field}" is {type(text).__name__}, not a string')
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
        fmt = detect_format(path, head)
    inc(f"files_{fmt}", 1)
    if fmt == "wikipedia":
        documents = read_wikipedia(stream, on_error, inc)
    elif fmt == "books":
        documents = read_book(stream, fallback_encoding, inc)
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


def archive_kind(path: str) -> str | None:
    """'bz2' or 'gzip' for a file decompressed by its name, else None."""
    return "bz2" if path.endswith(".bz2") else "gzip" if path.endswith(".gz") else None


def compression_fault(stream: IO[bytes], limit: int = FAULT_CHECK_BYTES) -> BaseException | None:
    """The decompression error raised within the next `limit` bytes of `stream`, if any."""
    try:
        while limit > 0 and (chunk := stream.read(min(limit, 1 << 20))):
            limit -= len(chunk)
    except (OSError, EOFError, zlib.error) as error:
        return error
    return None


def describe_error(error: BaseException, path: str = "") -> str:
    """A short reason for a read failure: corrupt/truncated archive, bad XML, bad bytes."""
    if isinstance(error, BadInput):
        return str(error)
    archive = archive_kind(path) or "compressed"
    if isinstance(error, EOFError):
        return f"truncated {archive} archive ({error})"
    if isinstance(error, IsADirectoryError):
        return "a directory, not a file"
    if isinstance(error, (zlib.error, gzip.BadGzipFile)) or (isinstance(error, OSError) and archive_kind(path)):
        return f"corrupt {archive} archive ({error})"
    if isinstance(error, OSError):
        return f"unreadable file ({error})"
    return f"{type(error).__name__}: {error}"


def raw_paragraphs(document: RawDocument) -> list[str]:
    """The document's paragraphs before normalisation, by format."""
    if document.format == "wikipedia":
        return wikipedia.wikitext_to_paragraphs(document.text)
    if document.format == "books":
        return books.book_paragraphs(document.text)
    return [line for line in document.text.split("\n") if line.strip()]
