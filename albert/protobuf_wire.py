"""The protobuf wire format's two building blocks, for the hand-written encoders (tf.train.Example
records, TensorBoard events) that run without TensorFlow or generated message classes."""

from __future__ import annotations


def varint(value: int) -> bytes:
    """A non-negative integer as a base-128 varint."""
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def length_delimited(number: int, payload: bytes) -> bytes:
    """Field `number` with wire type 2 (bytes, string or an embedded message): key, length,
    payload."""
    return varint(number << 3 | 2) + varint(len(payload)) + payload
