"""TensorBoard scalars without TensorFlow: an `events.out.tfevents.*` file of `Event` protobufs (wall
time, step, `Summary.Value{tag, simple_value}`) in TFRecord framing, which TensorBoard reads as scalars.

The file is rewritten whole through `fileio.write_atomic` at every write (as metrics.jsonl is), so it
works the same on local disks and object stores and a kill leaves the previous complete file.
"""

from __future__ import annotations

import os
import socket
import struct
import time

from albert import fileio
from albert.tfrecord_framing import tfrecord_frame


def _varint(value: int) -> bytes:
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _bytes_field(number: int, payload: bytes) -> bytes:
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload


def encode_event(wall_time: float, step: int = 0, scalars: dict[str, float] | None = None,
                 file_version: str | None = None) -> bytes:
    """A serialized tensorflow.Event: wall_time (1), step (2), file_version (3), summary (5) of
    Summary.Value{tag (1), simple_value (2)}."""
    event = b"\x09" + struct.pack("<d", wall_time) + b"\x10" + _varint(step & (2**64 - 1))
    if file_version is not None:
        event += _bytes_field(3, file_version.encode())
    if scalars:
        values = b"".join(
            _bytes_field(1, _bytes_field(1, tag.encode()) + b"\x15" + struct.pack("<f", float(value)))
            for tag, value in scalars.items()
        )
        event += _bytes_field(5, values)
    return event


class ScalarWriter:
    """Writes scalars to a new events file in `directory` (one file per writer, as tf.summary does)."""

    def __init__(self, directory: str):
        name = f"events.out.tfevents.{int(time.time())}.{socket.gethostname()}.{os.getpid()}.v2"
        self.path = fileio.join(directory, name)
        self.data = tfrecord_frame(encode_event(time.time(), file_version="brain.Event:2"))
        fileio.write_atomic(self.path, self.data)

    def write(self, step: int, scalars: dict[str, float]) -> None:
        self.data += tfrecord_frame(encode_event(time.time(), step, scalars))
        fileio.write_atomic(self.path, self.data)
