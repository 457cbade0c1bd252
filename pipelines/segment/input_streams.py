"""An input file's bytes: decompression by name, counted bytes, bounded and decoded lines, and the
reason of a read failure (a corrupt or truncated archive, bad bytes).

What pipelines.segment.input_formats' readers read from. Bad input raises `BadInput` with the
reason.
"""

from __future__ import annotations

import bz2
import gzip
import io
import zlib
from collections.abc import Iterator
from typing import IO, TYPE_CHECKING

if TYPE_CHECKING:  # the type only: pipelines.common.runner loads Beam
    from pipelines.common.runner import Counter


SNIFF_BYTES = 1 << 16
"""The first bytes of a file read ahead: format detection looks at them."""
# How far past a parse error a compressed file is read to find a corrupt block (bz2 blocks hold
# at most 900 kB before run-length encoding).
FAULT_CHECK_BYTES = 16 << 20
# Lines of text and books longer than this are cut into pieces (a line is a paragraph: no real one
# comes near it, and one unbounded line would be held, normalised and split whole).
MAX_LINE_BYTES = 1 << 20


class BadInput(ValueError):
    """A file that cannot be read as its format; the message is the reason."""


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


def bounded_lines(stream: IO[bytes], max_bytes: int, inc: Counter) -> Iterator[bytes]:
    """Lines of a byte stream (newline kept), a line longer than `max_bytes` cut into pieces.

    A piece ends at the last space within the bound (else at a UTF-8 character boundary), so no
    line, however long, is held whole; each line cut is counted as `lines_cut`.
    """
    reader = io.BufferedReader(stream, 1 << 20)
    carry = b""
    while True:
        line = carry + reader.readline(max_bytes - len(carry))
        carry = b""
        if not line:
            return
        if len(line) < max_bytes or line.endswith(b"\n"):
            yield line
            continue
        following = reader.peek(2)[:2]
        # ends just at the bound
        if not following or following.startswith(b"\n") or following == b"\r\n":
            yield line + reader.readline(2)
            continue
        cut = line.rfind(b" ") + 1 or _whole_characters(line)
        inc("lines_cut", 1)
        yield line[:cut] + b"\n"
        carry = line[cut:]


def _whole_characters(data: bytes) -> int:
    """The length of `data` without a UTF-8 character cut off at its end."""
    start = max(len(data) - 4, 0)
    # continuation bytes of an earlier character
    while start < len(data) and data[start] & 0xC0 == 0x80:
        start += 1
    try:
        data[start:].decode("utf-8")
    except UnicodeDecodeError as error:
        if error.reason == "unexpected end of data":
            return start + error.start
    return len(data)


def decoded_lines(
    stream: IO[bytes],
    fallback_encoding: str | None,
    inc: Counter,
    max_line_bytes: int | None = MAX_LINE_BYTES,
) -> Iterator[str]:
    """Lines of a byte stream decoded as UTF-8 (or `fallback_encoding`, counted), without newlines.

    Lines longer than `max_line_bytes` are cut into pieces (see `bounded_lines`); None keeps them
    whole."""
    lines = (
        io.BufferedReader(stream, 1 << 20)
        if max_line_bytes is None
        else bounded_lines(stream, max_line_bytes, inc)
    )
    for number, line in enumerate(lines, start=1):
        try:
            text = line.decode("utf-8")
        except UnicodeDecodeError as error:
            if fallback_encoding is None:
                raise BadInput(
                    f"line {number}: not UTF-8 (byte {line[error.start]:#04x} at column "
                    f"{error.start + 1}); set fallback_encoding to read such files"
                ) from None
            text = line.decode(fallback_encoding, errors="replace")
            inc("lines_fallback_encoding", 1)
        yield text.rstrip("\r\n")


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
    if isinstance(error, (zlib.error, gzip.BadGzipFile)) or (
        isinstance(error, OSError) and archive_kind(path)
    ):
        return f"corrupt {archive} archive ({error})"
    if isinstance(error, OSError):
        return f"unreadable file ({error})"
    return f"{type(error).__name__}: {error}"
