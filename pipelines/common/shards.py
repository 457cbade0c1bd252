"""Deterministic sharded output: the same elements give byte-identical files on any runner.

Each element is (sort_key, payload). Its shard is a hash of the sort key; each shard's payloads are
written in (sort_key, payload) order. Sorting is an external merge sort, so memory stays bounded
whatever the output size, on the in-process runner too: each bundle spills sorted runs of at most
`run_bytes` to temporary files, only the run paths are grouped by shard, and each shard is written
by merging its runs."""

from __future__ import annotations

import heapq
import struct
import uuid
from collections.abc import Iterable, Iterator
from typing import BinaryIO, Literal

import apache_beam as beam
from apache_beam.io.filesystems import FileSystems

from albert.hashing import stable_hash
from albert.tfrecord_framing import tfrecord_frame

Framing = Literal["raw", "tfrecord"]


def shard_of(sort_key: bytes, num_shards: int) -> int:
    return stable_hash(b"shard:" + sort_key) % num_shards


def shard_name(prefix: str, index: int, num_shards: int, suffix: str) -> str:
    return f"{prefix}-{index:05d}-of-{num_shards:05d}{suffix}"


def frame(payload: bytes, framing: Framing) -> bytes:
    return tfrecord_frame(payload) if framing == "tfrecord" else payload


_RUN_HEADER = struct.Struct("<II")


def write_run(handle: BinaryIO, pairs: list[tuple[bytes, bytes]]) -> None:
    """Write (sort_key, payload) pairs, sorted, as length-prefixed records."""
    handle.writelines(
        _RUN_HEADER.pack(len(key), len(payload)) + key + payload for key, payload in sorted(pairs)
    )


def read_run(handle: BinaryIO) -> Iterator[tuple[bytes, bytes]]:
    """The pairs of a run file, in the order written."""
    while header := handle.read(_RUN_HEADER.size):
        key_length, payload_length = _RUN_HEADER.unpack(header)
        yield handle.read(key_length), handle.read(payload_length)


def merge_runs(runs: Iterable[Iterable[tuple[bytes, bytes]]]) -> Iterator[tuple[bytes, bytes]]:
    """All pairs of sorted runs in (sort_key, payload) order: the same however they were split."""
    return heapq.merge(*runs)


class SpillSortedRuns(beam.DoFn):
    """Buffers pairs per partition and spills each full buffer as a sorted run file; emits
    (partition, run path). The partition is `shard_of` the key's first `group_bytes` (None: all of
    it)."""

    def __init__(
        self, run_dir: str, partitions: int, run_bytes: int, group_bytes: int | None = None
    ):
        self.run_dir, self.partitions, self.run_bytes = run_dir, partitions, run_bytes
        self.group_bytes = group_bytes

    def start_bundle(self):
        self.buffers: dict[int, list[tuple[bytes, bytes]]] = {}
        self.buffered = 0

    def process(self, pair: tuple[bytes, bytes]):
        partition = shard_of(pair[0][: self.group_bytes], self.partitions)
        self.buffers.setdefault(partition, []).append(pair)
        self.buffered += len(pair[0]) + len(pair[1]) + 100  # + the tuple's own bytes
        if self.buffered >= self.run_bytes:
            yield from self._spill()

    def finish_bundle(self):
        for element in self._spill():
            yield beam.transforms.window.GlobalWindows.windowed_value(element)

    def _spill(self) -> Iterator[tuple[int, str]]:
        for partition, pairs in sorted(self.buffers.items()):
            path = f"{self.run_dir}/part-{partition:05d}-{uuid.uuid4().hex}.run"
            with FileSystems.create(path) as handle:
                write_run(handle, pairs)
            yield partition, path
        self.buffers, self.buffered = {}, 0


def remove_runs(directory: str) -> None:
    """Delete the run files under `directory`, then the directory itself where the filesystem has
    directories (an object store has only the files)."""
    matched = FileSystems.match([FileSystems.join(directory, "*")])[0].metadata_list
    if matched:
        FileSystems.delete([metadata.path for metadata in matched])
    if FileSystems.exists(directory):
        FileSystems.delete([directory])


def _remove_dir_then_list(paths: list[str], directory: str) -> list[str]:
    """Delete the run directory and pass the written paths on, sorted."""
    remove_runs(directory)
    return sorted(paths)


class WriteShards(beam.PTransform):
    """Write (sort_key, payload) pairs to `num_shards` files `{prefix}-00000-of-0000N{suffix}`.

    Every shard file is written, empty or not. Temporary run files live in `{prefix}-runs/` and are
    deleted once every shard is written (not by the shard's own bundle: a runner may retry that
    bundle, and the retry reads them again). Outputs the written paths.
    """

    def __init__(
        self,
        prefix: str,
        num_shards: int,
        suffix: str,
        framing: Framing = "raw",
        run_bytes: int = 64 << 20,
    ):
        super().__init__()
        if num_shards < 1:
            raise ValueError(f"num_shards must be at least 1, got {num_shards}")
        self.prefix, self.num_shards, self.suffix, self.framing = (
            prefix,
            num_shards,
            suffix,
            framing,
        )
        self.run_bytes = run_bytes

    def expand(self, pairs):
        run_dir = f"{self.prefix}-runs"
        runs = pairs | "SpillSortedRuns" >> beam.ParDo(
            SpillSortedRuns(run_dir, self.num_shards, self.run_bytes)
        )
        every_shard = pairs.pipeline | "EveryShard" >> beam.Create(  # grouped below: no reshuffle
            [(index, None) for index in range(self.num_shards)], reshuffle=False
        )
        return (
            (runs, every_shard)
            | "Flatten" >> beam.Flatten()
            | "GroupRunsByShard" >> beam.GroupByKey()
            | "MergeShard" >> beam.Map(self._merge)
            | "AllShards" >> beam.combiners.ToList().without_defaults()  # never empty: every shard
            | "RemoveRunDir" >> beam.FlatMap(_remove_dir_then_list, run_dir)
        )

    def _merge(self, shard: tuple[int, Iterable[str | None]]) -> str:
        index, run_paths = shard
        run_paths = sorted(path for path in run_paths if path is not None)
        path = shard_name(self.prefix, index, self.num_shards, self.suffix)
        handles = [FileSystems.open(run_path) for run_path in run_paths]
        try:
            with FileSystems.create(path) as output:
                for _, payload in merge_runs(read_run(handle) for handle in handles):
                    output.write(frame(payload, self.framing))
        finally:
            for handle in handles:
                handle.close()
        return path
