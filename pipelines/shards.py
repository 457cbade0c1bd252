"""Deterministic sharded output: the same elements give byte-identical files on any runner.

Each element is (sort_key, payload). Its shard is a hash of the sort key; each shard's payloads are
written in sort-key order. Memory per worker is one shard, so choose enough shards for the corpus.
"""

from __future__ import annotations

import hashlib
import struct
from typing import Iterable, Literal

import apache_beam as beam
import google_crc32c
from apache_beam.io.filesystems import FileSystems

Framing = Literal["raw", "tfrecord"]


def stable_hash(data: bytes) -> int:
    """A 64-bit hash that is the same in every process and on every machine."""
    return int.from_bytes(hashlib.sha256(data).digest()[:8], "big")


def shard_of(sort_key: bytes, num_shards: int) -> int:
    return stable_hash(b"shard:" + sort_key) % num_shards


def shard_name(prefix: str, index: int, num_shards: int, suffix: str) -> str:
    return f"{prefix}-{index:05d}-of-{num_shards:05d}{suffix}"


def _masked_crc32c(data: bytes) -> int:
    crc = google_crc32c.value(data)
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def tfrecord_frame(record: bytes) -> bytes:
    """One record in TFRecord framing: length, masked CRC32C of length, data, masked CRC32C of data."""
    length = struct.pack("<Q", len(record))
    return (
        length
        + struct.pack("<I", _masked_crc32c(length))
        + record
        + struct.pack("<I", _masked_crc32c(record))
    )


def encode_shard(payloads: Iterable[tuple[bytes, bytes]], framing: Framing) -> Iterable[bytes]:
    """Payloads sorted by (sort_key, payload), framed for the file format."""
    for _, payload in sorted(payloads):
        yield tfrecord_frame(payload) if framing == "tfrecord" else payload


class WriteShards(beam.PTransform):
    """Write (sort_key, payload) pairs to `num_shards` files `{prefix}-00000-of-0000N{suffix}`.

    Every shard file is written, empty or not. Outputs the written paths.
    """

    def __init__(self, prefix: str, num_shards: int, suffix: str, framing: Framing = "raw"):
        super().__init__()
        if num_shards < 1:
            raise ValueError(f"num_shards must be at least 1, got {num_shards}")
        self.prefix, self.num_shards, self.suffix, self.framing = prefix, num_shards, suffix, framing

    def expand(self, pairs):
        num_shards = self.num_shards
        keyed = pairs | "KeyByShard" >> beam.Map(lambda kv: (shard_of(kv[0], num_shards), kv))
        every_shard = (
            pairs.pipeline
            | "EveryShard" >> beam.Create([(index, None) for index in range(num_shards)])
        )
        return (
            (keyed, every_shard)
            | "Flatten" >> beam.Flatten()
            | "GroupByShard" >> beam.GroupByKey()
            | "WriteShard" >> beam.Map(self._write)
        )

    def _write(self, shard: tuple[int, Iterable]) -> str:
        index, items = shard
        path = shard_name(self.prefix, index, self.num_shards, self.suffix)
        with FileSystems.create(path) as handle:
            for chunk in encode_shard((item for item in items if item is not None), self.framing):
                handle.write(chunk)
        return path
