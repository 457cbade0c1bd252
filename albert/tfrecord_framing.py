"""TFRecord framing without TensorFlow: each record is its length (uint64), the masked CRC32C of the
length, the data, and the masked CRC32C of the data. The pipelines write it, the trainer checks
it."""

from __future__ import annotations

import gzip
import struct
from collections.abc import Iterator

import google_crc32c

from albert.errors import StageError
from albert.fs import open_file

_HEADER = struct.Struct("<QI")  # record length, masked crc32c of the length
_FOOTER = struct.Struct("<I")  # masked crc32c of the data
_LENGTH = struct.Struct("<Q")


def masked_crc32c(data: bytes) -> int:
    """TFRecord's checksum: crc32c rotated right by 15 bits plus a constant (mod 2**32)."""
    crc = google_crc32c.value(data)
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def tfrecord_frame(record: bytes) -> bytes:
    """One record in TFRecord framing."""
    length = _LENGTH.pack(len(record))
    return (
        length + _FOOTER.pack(masked_crc32c(length)) + record + _FOOTER.pack(masked_crc32c(record))
    )


def _read_exactly(handle, size: int) -> bytes:
    data = handle.read(size)
    while len(data) < size:
        more = handle.read(size - len(data))
        if not more:
            break
        data += more
    return data


def tfrecord_records(path: str) -> Iterator[bytes]:
    """The records of one TFRecord file (gzip when it ends in .gz), each framing CRC verified.

    Raises StageError naming the file, the record index and what is wrong (truncated, corrupted).
    """
    with open_file(path, "rb") as raw:
        handle = gzip.GzipFile(fileobj=raw) if path.endswith(".gz") else raw
        index = 0
        while True:
            try:
                header = _read_exactly(handle, _HEADER.size)
            except (OSError, EOFError) as error:  # a corrupt gzip stream
                raise StageError(f"{path}: record {index}: unreadable ({error})") from None
            if not header:
                return
            if len(header) < _HEADER.size:
                raise StageError(
                    f"{path}: record {index}: truncated (file ends inside the record header)"
                )
            length, length_crc = _HEADER.unpack(header)
            if masked_crc32c(header[:8]) != length_crc:
                raise StageError(f"{path}: record {index}: corrupted (length CRC mismatch)")
            try:
                data = _read_exactly(handle, length)
                footer = _read_exactly(handle, _FOOTER.size)
            except (OSError, EOFError) as error:
                raise StageError(f"{path}: record {index}: unreadable ({error})") from None
            if len(data) < length or len(footer) < _FOOTER.size:
                raise StageError(f"{path}: record {index}: truncated (file ends inside the record)")
            if masked_crc32c(data) != _FOOTER.unpack(footer)[0]:
                raise StageError(f"{path}: record {index}: corrupted (data CRC mismatch)")
            yield data
            index += 1
