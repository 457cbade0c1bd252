"""TensorBoard scalars without TensorFlow: an `events.out.tfevents.*` file of `Event` protobufs
(wall time, step, `Summary.Value{tag, simple_value}`) in TFRecord framing, which TensorBoard reads
as scalars.

The file is rewritten whole through `write_atomic` at every write (as metrics.jsonl is), so it
works the same on local disks and object stores and a kill leaves the previous complete file.
"""

from __future__ import annotations

import os
import socket
import struct
import time

from albert.fs import join
from albert.outputs import write_atomic
from albert.protobuf_wire import length_delimited, varint
from albert.tfrecord_framing import tfrecord_frame


def encode_event(
    wall_time: float,
    step: int = 0,
    scalars: dict[str, float] | None = None,
    file_version: str | None = None,
) -> bytes:
    """A serialized tensorflow.Event: wall_time (1), step (2), file_version (3), summary (5) of
    Summary.Value{tag (1), simple_value (2)}."""
    event = b"\x09" + struct.pack("<d", wall_time) + b"\x10" + varint(step & (2**64 - 1))
    if file_version is not None:
        event += length_delimited(3, file_version.encode())
    if scalars:
        values = b"".join(
            length_delimited(
                1, length_delimited(1, tag.encode()) + b"\x15" + struct.pack("<f", float(value))
            )
            for tag, value in scalars.items()
        )
        event += length_delimited(5, values)
    return event


class ScalarWriter:
    """Writes scalars to a new events file in `directory` (one file per writer, as tf.summary
    does)."""

    def __init__(self, directory: str):
        name = f"events.out.tfevents.{int(time.time())}.{socket.gethostname()}.{os.getpid()}.v2"
        self.path = join(directory, name)
        self.data = tfrecord_frame(encode_event(time.time(), file_version="brain.Event:2"))
        write_atomic(self.path, self.data)

    def write(self, step: int, scalars: dict[str, float]) -> None:
        self.data += tfrecord_frame(encode_event(time.time(), step, scalars))
        write_atomic(self.path, self.data)
