"""Grouping by key through sorted spill files: memory bounded by a setting, not by the data.

`MergeSorted` hash-partitions (sort_key, payload) pairs by a prefix of the key, spills each bundle's
pairs as sorted run files (`pipelines.common.shards`' run format) whenever `run_bytes` are buffered,
sends only the run paths through the shuffle, and hands each partition's pairs, merged in (sort_key,
payload) order, to a pure `reduce(pairs, inc)` whose outputs become the transform's output. Pairs
with the same key prefix meet in one partition, in order, so a reduce groups them with
`itertools.groupby` and streams. On Beam's in-process runner, whose shuffles live in memory, this
keeps duplicate detection and redistribution flat; on any runner the result is the same bytes
whatever the bundles, workers or retries (a run is written whole or not at all).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator

import apache_beam as beam
from apache_beam.io.filesystems import FileSystems

from pipelines.common.runner import Counter, CountingDoFn, counted
from pipelines.common.shards import SpillSortedRuns, merge_runs, read_run, remove_runs

Pair = tuple[bytes, bytes]
Reduce = Callable[[Iterator[Pair], Counter], Iterable]


class _MergeAndReduce(CountingDoFn):
    """(partition, run paths) -> reduce(the partition's pairs in sorted order). The runs stay until
    the stage removes its run directories at the end: a runner may retry this bundle, and the retry
    reads them again."""

    def __init__(self, reduce: Reduce, namespace: str):
        super().__init__(namespace)
        self.reduce = reduce

    def process(self, element, **side_inputs):
        _, paths = element
        paths = sorted(paths)
        handles = [FileSystems.open(path) for path in paths]
        try:
            yield from self.reduce(
                merge_runs(read_run(handle) for handle in handles), self.inc, **side_inputs
            )
        finally:
            for handle in handles:
                handle.close()


class MergeSorted(beam.PTransform):
    """(sort_key, payload) pairs -> what `reduce` yields for each partition's pairs in sorted order.

    Applied to one PCollection of pairs or to a tuple of them (merged together, never flattened).
    `group_bytes`: the key prefix that picks the partition (pairs sharing it are reduced together;
    None: the whole key). `run_dir`: where run files live until their partition is merged (on the
    output's filesystem, so that every worker sees them). `counts`: the list `reduce`'s counts
    (namespace `namespace`) join. `side_inputs`: keyword side inputs passed on to `reduce` (the main
    input they wait for is only the run paths, so nothing large is held while they are computed).
    """

    def __init__(
        self,
        run_dir: str,
        reduce: Reduce,
        *,
        group_bytes: int | None,
        counts: list,
        namespace: str,
        partitions: int = 32,
        run_bytes: int = 32 << 20,
        side_inputs: dict | None = None,
    ):
        super().__init__()
        self.run_dir, self.reduce, self.group_bytes = run_dir, reduce, group_bytes
        self.counts, self.namespace = counts, namespace
        self.partitions, self.run_bytes = partitions, run_bytes
        self.reduce_side_inputs = (
            side_inputs or {}
        )  # not `side_inputs`: a PTransform attribute of Beam's

    def expand(self, pairs):
        # Several inputs are spilled each by its own DoFn and only the run paths are flattened: a
        # Flatten of the pairs themselves would be an in-memory buffer on the in-process runner.
        inputs = pairs if isinstance(pairs, tuple) else (pairs,)
        runs = tuple(
            part
            | f"Spill{index}"
            >> beam.ParDo(
                SpillSortedRuns(self.run_dir, self.partitions, self.run_bytes, self.group_bytes)
            )
            for index, part in enumerate(inputs)
        )
        grouped = runs | "FlattenRuns" >> beam.Flatten() | "GroupRuns" >> beam.GroupByKey()
        return counted(
            grouped,
            "MergeReduce",
            _MergeAndReduce(self.reduce, self.namespace),
            self.counts,
            **self.reduce_side_inputs,
        )


def remove_run_dirs(directories: Iterable[str]) -> None:
    """Delete the run directories and their files, once everything that reads them is written."""
    for directory in directories:
        remove_runs(directory)
