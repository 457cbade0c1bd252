"""An epoch's record order (`model.input.records` defines it) as plain Python generators over
`(path, index, record)` elements: what the Grain input (`model.input.grain`) runs, in this process
or in each of its worker processes. tf.data builds the same order from its own ops
(`model.input.tf_data`); tests check that both give the same batches.

Plain generators instead of a chain of Grain datasets: every Grain iterator level costs a few
microseconds per record, and every input worker reads the whole epoch (it keeps only its own
batches), so that cost is paid once per worker per record.

A run reads its epochs as one stream (`chained_epochs`), each batch tagged with its epoch and its
index in that epoch: the input's workers carry on from one epoch into the next instead of starting
again at each boundary, and the trainer knows its exact position for checkpoints.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Iterator, Sequence

import numpy as np

from albert.tfrecord_framing import tfrecord_records
from model.input.records import decode_record, length_bucket, window_permutation

Element = tuple[str, int, bytes]  # path, index of the record in its shard, serialized record
Positioned = tuple[int, Element]  # position in the epoch, element


def shard_records(path: str, modulus: int = 0, keep_heldout: bool = False) -> Iterator[Element]:
    """The records of one shard; with a modulus, only those whose index is a multiple of it
    (`keep_heldout`) or only the others."""
    for index, record in enumerate(tfrecord_records(path)):
        if not modulus or (index % modulus == 0) == keep_heldout:
            yield path, index, record


def interleaved(
    sources: Sequence, cycle_length: int, open_source: Callable[[object], Iterator]
) -> Iterator:
    """The items of `open_source(s)` for every source, round-robin one at a time over
    `cycle_length` open sources: a source that ends leaves its slot empty until the cycle comes
    back to it, which then opens the next source there (Grain's `InterleaveIterDataset`, tf.data's
    `interleave` with block_length 1)."""
    slots: list[Iterator | None] = [None] * cycle_length
    opened = slot = 0
    while True:
        current = slots[slot]
        if current is None and opened < len(sources):
            slots[slot] = current = iter(open_source(sources[opened]))
            opened += 1
        if current is not None:
            item = next(current, _END)
            if item is _END:
                slots[slot] = None
            else:
                yield item
        elif all(s is None for s in slots):
            return
        slot = (slot + 1) % cycle_length


_END = object()  # a source's end, as next() returns it


def window_permuted(
    elements: Iterator, seed: int, epoch: int, window: int
) -> Iterator[tuple[int, object]]:
    """(position in the epoch, element): consecutive windows of `window` elements, window `w`
    permuted by `window_permutation(seed, epoch, w, size)`."""
    for number in itertools.count():
        block = list(itertools.islice(elements, window))
        if not block:
            return
        first = number * window
        order = window_permutation(seed, epoch, number, len(block))
        yield from ((first + k, block[i]) for k, i in enumerate(order.tolist()))


def fixed_batches(items: Iterator, size: int, drop_remainder: bool = True) -> Iterator[list]:
    """Lists of `size` consecutive items; the last shorter one only without `drop_remainder`."""
    while batch := list(itertools.islice(items, size)):
        if len(batch) < size and drop_remainder:
            return
        yield batch


class LengthBatch(list):
    """A batch of records of one length bin (`--length-buckets`): decoded, its sequence features
    are cut to the bin's `edge` tokens."""

    def __init__(self, records, edge: int):
        super().__init__(records)
        self.edge = edge


def length_binned(
    items: Iterator[Positioned], size: int, edges: list[int]
) -> Iterator[LengthBatch]:
    """Batches of `size` records of the same length bin (`model.input.records.length_bucket`),
    in the order they fill up as the records stream past (NVIDIA LDDL's binning); bins partly
    filled at the end are not emitted."""
    bins: list[list] = [[] for _ in edges]
    for item in items:
        path, index, record = item[1]
        mask = decode_record(path, index, record, ("input_mask",))["input_mask"]
        bucket = length_bucket(int(np.count_nonzero(mask)), edges)
        bins[bucket].append(item)
        if len(bins[bucket]) == size:
            yield LengthBatch(bins[bucket], edges[bucket])
            bins[bucket] = []


def training_batches(
    files: Sequence[str],
    modulus: int,
    cycle_length: int,
    seed: int,
    epoch: int,
    window: int,
    size: int,
    edges: list[int] | None = None,
) -> Iterator[list[Positioned]]:
    """The training batches of an epoch whose shards open in the order `files` (`epoch_files`):
    its records (`training_records`) in batches of `size` (the remainder dropped) or, with `edges`,
    length-binned batches."""
    positioned = training_records(files, modulus, cycle_length, seed, epoch, window)
    return length_binned(positioned, size, edges) if edges else fixed_batches(positioned, size)


def training_records(
    files: Sequence[str], modulus: int, cycle_length: int, seed: int, epoch: int, window: int
) -> Iterator[Positioned]:
    """The positioned records of an epoch whose shards open in the order `files`: interleaved,
    windows permuted."""

    def open_shard(path: str) -> Iterator[Element]:
        return shard_records(path, modulus, False)

    records = interleaved(files, min(cycle_length, len(files)), open_shard)
    return window_permuted(records, seed, epoch, window)


def chained_epochs(
    open_epoch: Callable[[int, int], Iterable],
    first: int,
    skip: int = 0,
    epochs: int | None = None,
) -> Iterator[tuple[int, int, object]]:
    """(epoch, index of the batch in its epoch, batch) of epochs `first`, `first` + 1, ... from
    batch `skip` of the first on: `epochs` of them, or until an epoch read from its start gives no
    batch (data too small for one). `open_epoch(epoch, skip)` gives an epoch's batches from its
    `skip`-th on."""
    numbers = itertools.count(first) if epochs is None else range(first, first + epochs)
    for epoch in numbers:
        start = skip if epoch == first else 0
        given = 0
        for given, batch in enumerate(open_epoch(epoch, start), 1):
            yield epoch, start + given - 1, batch
        if start == 0 and not given:
            return


def heldout_batches(files: Sequence[str], modulus: int, size: int) -> Iterator[list[Positioned]]:
    """The held-out records in file order, numbered from 0, in batches of `size` (the last partial
    batch kept)."""
    records = itertools.chain.from_iterable(shard_records(f, modulus, True) for f in files)
    return fixed_batches(enumerate(records), size, drop_remainder=False)
