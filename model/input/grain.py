"""Grain input for pretraining on the JAX backend: never imports TensorFlow.

The same batches, in the same order, as the tf.data input (`model.input.tf_data`) from the same data
and seed: the epoch order of `model.input.records` (shards permuted, interleaved round-robin from
our CRC-checking TFRecord reader, windows permuted) as `model.input.epoch_order` generates it,
records decoded with `albert.pretraining_example.decode_example` and, with dynamic masking, masked a
batch at a time by the same `DynamicMasker` (record i of epoch e with the generator [seed, e, i])
inside the Grain map, in this process or in `workers` processes (Grain's `mp_prefetch`).

A run reads one stream over all its epochs (`run_batches`), each batch tagged (epoch, batch index):
the workers start once and carry on across epoch boundaries. Resume: the data position is
`(epoch, batch index)`, kept in every checkpoint; the stream restarts at epoch `epoch`,
`skip_batches` in (the skipped records are read and permuted, not decoded or masked). Grain's own
iterator state is not saved: (epoch, batch) determines it.

Closing: each of `mp_prefetch`'s worker processes fills a queue of batches in shared memory
(/dev/shm), read by a prefetch thread of this process that holds more of them. A run stops with
these buffers full. Left to the garbage collector, its iterator is closed only at interpreter
shutdown: by multiprocessing's exit hook and by `__del__` during the final collection, while modules
are being torn down (the batches' shared memory then fails to unlink: the resource tracker reports
it leaked) and while threads can no longer run. `close_batches` stops the workers and threads and
unlinks that memory when the loop ends, and the batches the loop receives are copies in its own
memory: nothing that outlives a step (a device transfer, an exception's traceback) pins a segment.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import gc
import itertools

import grain
import numpy as np
from absl import flags

from model.input import epoch_order, packed
from model.input.packed import BatchDecoder, PackedDecoder
from model.input.records import (
    MLM_DENOMINATOR_EPSILON,
    DataSpec,
    epoch_files,
    length_bucket_edges,
    split_files,
    training_files,
)

PREFETCH_BATCHES = 2  # batches a background thread prepares ahead of the training step


class _Batches(grain.IterDataset):
    """Source: the items `make()` generates (a partial of a `model.input.epoch_order` function, so
    that Grain can send it to worker processes). Grain's `mp_prefetch` slices it (`set_slice`):
    worker i of n keeps items i, i + n, ... (every worker reads the whole stream; reading is cheap,
    decoding and masking are not) and Grain interleaves them back in order."""

    def __init__(self, make: functools.partial):
        super().__init__()
        self.make, self.start, self.step = make, 0, 1

    def set_slice(self, sl: slice, sequential_slice: bool = False) -> None:
        self.start, self.step = sl.start or 0, sl.step or 1

    def __iter__(self):
        return _BatchIterator(self)


class _BatchIterator(grain.DatasetIterator):
    """State: how many items were generated; set_state regenerates the stream up to there."""

    def __init__(self, dataset: _Batches):
        super().__init__()
        self.dataset = dataset
        self.set_state({"generated": 0})

    def __next__(self):
        start, step = self.dataset.start, self.dataset.step
        for item in self.items:
            self.generated += 1
            if (self.generated - 1) % step == start:
                return item
        raise StopIteration

    def get_state(self):
        return {"generated": self.generated}

    def set_state(self, state):
        self.generated = state["generated"]
        self.items = itertools.islice(self.dataset.make(), self.generated, None)


class _DecodeRows(grain.transforms.Map):
    """(epoch, index, batch of (position, (path, index, record))) -> (epoch, index, batch): its rows
    `rows` decoded (`Decode`), stacked and, with dynamic masking, masked together
    (`DynamicMasker`, record i of the epoch with the generator [seed, epoch, i]); a batch of packed
    rows (`packed.PackedBatch`) decoded, masked and packed (`PackedDecoder`); with
    `denominators`, the loss denominators added (`with_denominators`)."""

    def __init__(
        self, spec: DataSpec, seed: int, rows: slice = slice(None), denominators: bool = False
    ):
        self.rows, self.denominators = rows, denominators
        self.decoder, self.packer = BatchDecoder(spec, seed), PackedDecoder(spec, seed)

    def map(self, item):
        epoch, index, records = item
        edge, shape = getattr(records, "edge", None), getattr(records, "shape", None)
        records = records[self.rows]
        if shape is not None:
            batch = self.packer(epoch, records, shape)
            return epoch, index, with_denominators(batch) if self.denominators else batch
        batch = self.decoder(epoch, records, edge)
        return epoch, index, with_denominators(batch) if self.denominators else batch


def with_denominators(batch: dict) -> dict:
    """The global loss denominators (masked-token weight, instances: the rows, or the packed rows'
    `sop_weights`) on every example of a batch, as `model.pretrain` adds them to tf.data
    batches."""
    size = len(batch["input_ids"])
    weight = batch["masked_lm_weights"].sum(dtype=np.float32) + np.float32(MLM_DENOMINATOR_EPSILON)
    instances = batch["sop_weights"].sum(dtype=np.float32) if "sop_weights" in batch else size
    batch["mlm_denominator"] = np.full(size, weight, np.float32)
    batch["sop_denominator"] = np.full(size, instances, np.float32)
    return batch


def _epoch_batches(
    spec: DataSpec,
    seed: int,
    eval_every: int,
    cycle_length: int,
    shuffle_buffer: int,
    batch_size: int,
    edges: list[int] | None,
    packing: int,
    epoch: int,
    skip: int,
):
    """The batches of records of epoch `epoch` from its `skip`-th on (`epoch_order`), or with
    `packing` K > 0, of rows of up to K records (`packed.packed_batches`)."""
    ordered, modulus = epoch_files(spec, seed, epoch, eval_every)
    if packing:
        records = epoch_order.training_records(
            ordered, modulus, cycle_length, seed, epoch, shuffle_buffer
        )
        shape = packed.spec_shape(spec, packing)
        batches = packed.packed_batches(records, batch_size, shape, packed.Budgets(spec))
    else:
        batches = epoch_order.training_batches(
            ordered, modulus, cycle_length, seed, epoch, shuffle_buffer, batch_size, edges
        )
    return itertools.islice(batches, skip, None)


def run_batches(
    spec: DataSpec,
    batch_size: int,
    *,
    epoch: int,
    seed: int,
    skip_batches: int = 0,
    epochs: int | None = None,
    shuffle_buffer: int = 10_000,
    cycle_length: int = 8,
    eval_every: int = 20,
    denominators: bool = True,
    process: tuple[int, int] = (0, 1),
    workers: int = 0,
    length_buckets: int = 0,
    packing: int = 0,
) -> grain.IterDataset:
    """A run's training batches, epoch after epoch from batch `skip_batches` of `epoch` on, as
    (epoch, index of the batch in its epoch, batch): `epochs` epochs, or until one holds no whole
    batch. Each batch is a dict of numpy arrays (drop_remainder): the batch of that epoch that
    `model.input.tf_data.train_dataset` gives (with the loss denominators).

    One stream for the whole run: its `workers` carry on from one epoch into the next. Close its
    iterator (`close_batches`) when done with it, before the run ends.

    `workers`: processes that decode and mask the batches (Grain's `mp_prefetch`, batch k of the
    stream in worker k mod n); 0 prepares them in a thread of this process. The batches and their
    order are the same for any number.

    `length_buckets` k > 0: each batch holds records of one of k length bins and is cut to the bin's
    longest length (`epoch_order.length_binned`); `skip_batches` then counts these batches.

    `packing` K > 0: each batch holds `batch_size` packed rows of up to K records each
    (`model.input.packed`, the features of `model.input.packing`); `skip_batches` and `process`
    count these rows, and the sequence denominator is the batch's instances (`sop_weights`).

    `process` (index i, count n) of a multi-process job: every process reads the same global batches
    of `batch_size` records but decodes and returns only its rows, i*b to (i+1)*b with
    b = batch_size / n, without denominators (those are the global batch's: the JAX step computes
    them)."""
    index, count = process
    rows = batch_size // count
    training_files(spec, eval_every)  # a StageError here, not in a worker, if none
    edges = length_bucket_edges(spec.max_seq_length, length_buckets) if length_buckets else None
    open_epoch = functools.partial(
        _epoch_batches,
        *(spec, seed, eval_every, cycle_length, shuffle_buffer, batch_size, edges, packing),
    )
    make = functools.partial(epoch_order.chained_epochs, open_epoch, epoch, skip_batches, epochs)
    batches = _Batches(make).map(
        _DecodeRows(
            spec, seed, slice(index * rows, (index + 1) * rows), denominators and count == 1
        )
    )
    if workers:
        if not flags.FLAGS.is_parsed():  # Grain's worker processes read its absl flags' defaults
            flags.FLAGS.mark_as_parsed()
        options = grain.MultiprocessingOptions(
            num_workers=workers, per_worker_buffer_size=PREFETCH_BATCHES
        )
        return batches.mp_prefetch(options).map(_in_own_memory)
    return grain.experimental.ThreadPrefetchIterDataset(
        batches, prefetch_buffer_size=PREFETCH_BATCHES
    )


def _in_own_memory(item):
    """A tagged batch copied out of the workers' shared memory (see the module doc): what holds a
    batch afterwards (the step's device transfer, a traceback) never holds a segment, which Grain
    unlinks as soon as its array is collected, right after the copy."""
    epoch, index, batch = item
    return epoch, index, {name: np.array(value) for name, value in batch.items()}


def close_batches(iterator, workers: int) -> None:
    """Stop `iterator`'s input workers and prefetch threads now and, when it had `workers` > 0,
    unlink the shared memory of the batches they had prepared, instead of leaving that to
    interpreter shutdown (see the module doc); again at this process's exit, for batches still held
    then. Without workers no batch is in shared memory: nothing to unlink, no garbage collection."""
    iterator.close()
    if not workers:
        return
    unlink_released_batches()
    if not _AT_EXIT:  # registered after multiprocessing's exit hook, so it runs before it
        atexit.register(unlink_released_batches)
        _AT_EXIT.append(unlink_released_batches)


_AT_EXIT: list = []


def unlink_released_batches(timeout: float = 30.0) -> None:
    """Unlink the segments of the batches no longer referenced, and from now on unlink each batch
    in the thread that releases it. Grain's unlink thread first unlinks those it was given (in
    order; a process that exits first leaves the rest to the resource tracker, which reports them
    leaked) and then stops (a later iterator starts another). Not in that thread from now on: the
    batches held only in reference cycles (an error raised in a worker carries, in its traceback's
    cycle, the frame of Grain's prefetch thread and the last batch it handled) are freed by the
    garbage collector, which also closes their segments in its own thread, and when two threads
    close one segment, one of them fails on a closed file descriptor; when that is Grain's thread,
    the segment is never unlinked."""
    from grain._src.python.ipc import shared_memory_array  # the unlink thread is Grain's own

    arrays = shared_memory_array.SharedMemoryArray
    unlinking = getattr(arrays, "_del_thread_pool", None)
    if unlinking is not None:
        arrays._del_thread_pool = None  # without a pool, an array unlinks in its own `__del__`
        with contextlib.suppress(ValueError):  # a pool already stopped: nothing more to wait for
            unlinking.apply_async(int).wait(timeout)  # queued after every unlink asked for so far
        unlinking.close()
    gc.collect()


def train_batches(spec: DataSpec, batch_size: int, **options) -> grain.IterDataset:
    """One epoch of training batches (dicts of numpy arrays): `run_batches` (same `options`) of
    epoch `epoch` alone, without the tags."""
    return run_batches(spec, batch_size, epochs=1, **options).map(_batch_of)


def _batch_of(item):
    return item[2]


def _heldout_epoch(files: list[str], modulus: int, batch_size: int, epoch: int, skip: int):
    return epoch_order.heldout_batches(files, modulus, batch_size)


def heldout_batches(
    spec: DataSpec, batch_size: int, *, seed: int = 0, eval_every: int = 20, max_batches=None
):
    """The held-out records in file order, batched (the last partial batch kept), masked as epoch 0:
    `model.input.tf_data.heldout_dataset`'s batches."""
    _, files, modulus = split_files(spec, eval_every)
    open_epoch = functools.partial(_heldout_epoch, files, modulus, batch_size)
    make = functools.partial(epoch_order.chained_epochs, open_epoch, 0, 0, 1)
    batches = _Batches(make).map(_DecodeRows(spec, seed)).map(_batch_of)
    if max_batches:
        batches = grain.experimental.LimitIterDataset(batches, count=max_batches)
    return batches
