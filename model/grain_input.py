"""Grain input for pretraining on the JAX backend: never imports TensorFlow.

The same batches, in the same order, as the tf.data input (`model.pretrain_data`) from the same data
and seed: the epoch order of `model.pretrain_records` (shards permuted, Grain's round-robin
`InterleaveIterDataset` over our CRC-checking TFRecord reader, windows permuted), records decoded
with `albert.pretraining_example.decode_example` and, with dynamic masking, masked a batch at a time
by the same `DynamicMasker` (record i of epoch e with the generator [seed, e, i]) inside the Grain
map, in this process or in `workers` processes (Grain's `mp_prefetch`).

Resume: the data position is `(epoch, batch index)`, kept in every checkpoint; `train_batches`
rebuilds epoch `epoch` and starts `skip_batches` in (the skipped records are read and permuted, not
decoded or masked). Grain's own iterator state is not saved: (epoch, batch) determines it.
"""

from __future__ import annotations

import itertools

import grain
import numpy as np
from absl import flags

from albert.errors import StageError
from albert.pretraining_example import INT_FEATURES_PRED, INT_FEATURES_SEQ
from albert.tfrecord_framing import tfrecord_records
from model.pretrain_records import (
    MLM_DENOMINATOR_EPSILON,
    DataSpec,
    DynamicMasker,
    decode_record,
    epoch_files,
    length_bucket,
    length_bucket_edges,
    split_files,
    window_permutation,
)

PREFETCH_BATCHES = 2  # batches a background thread prepares ahead of the training step


class _ShardRecords(grain.IterDataset):
    """(path, index, serialized record) of one TFRecord shard; with a modulus, only the records
    whose index is a multiple of it (keep_heldout) or only the others."""

    def __init__(self, path: str, modulus: int = 0, keep_heldout: bool = False):
        super().__init__()
        self.path, self.modulus, self.keep_heldout = path, modulus, keep_heldout

    def __iter__(self):
        return _ShardIterator(self)


class _ShardIterator(grain.DatasetIterator):
    """State: how many records of the shard were read (set_state reopens the file and reads past
    them)."""

    def __init__(self, shard: _ShardRecords):
        super().__init__()
        self.shard = shard
        self.set_state({"next_index": 0})

    def __next__(self):
        modulus = self.shard.modulus
        for index, record in self.records:
            self.next_index = index + 1
            if not modulus or (index % modulus == 0) == self.shard.keep_heldout:
                return self.shard.path, index, record
        raise StopIteration

    def get_state(self):
        return {"next_index": self.next_index}

    def set_state(self, state):
        self.next_index = state["next_index"]
        self.records = itertools.islice(
            enumerate(tfrecord_records(self.shard.path)), self.next_index, None
        )


class _Unwindow(grain.experimental.FlatMapTransform):
    """A window of records -> its records permuted by `window_permutation`, each with its index in
    the epoch; records before `skip` are dropped."""

    def __init__(self, seed: int, epoch: int, window: int, skip: int):
        self.seed, self.epoch, self.max_fan_out, self.skip = seed, epoch, window, skip

    def flat_map(self, indexed_window):
        number, records = indexed_window
        first = number * self.max_fan_out
        if first + len(records) <= self.skip:
            return []
        order = window_permutation(self.seed, self.epoch, number, len(records))
        return [(first + k, records[i]) for k, i in enumerate(order) if first + k >= self.skip]


class _Decode:
    """(path, index, record) -> the example tf.data's `parse_fn` gives: int32 features, float32
    masked_lm_weights, fixed lengths checked (StageError naming the record otherwise)."""

    def __init__(self, spec: DataSpec):
        seq, preds = spec.max_seq_length, spec.max_predictions_per_seq
        self.lengths = {name: seq for name in INT_FEATURES_SEQ} | {"next_sentence_labels": 1}
        if spec.masking != "dynamic":
            self.lengths |= {name: preds for name in (*INT_FEATURES_PRED, "masked_lm_weights")}

    def __call__(self, path: str, index: int, record: bytes) -> dict:
        features = decode_record(path, index, record, self.lengths)
        example = {}
        for name, length in self.lengths.items():
            values = features.get(name)
            if values is None or len(values) != length:
                found = "absent" if values is None else f"of length {len(values)}"
                raise StageError(
                    f"{path}: record {index}: feature {name} is {found}, expected length {length}"
                )
            example[name] = values if name == "masked_lm_weights" else values.astype(np.int32)
        return example


class _DecodeRows(grain.transforms.Map):
    """A batch of (epoch index, (path, index, record)) -> its rows `rows` decoded (`_Decode`),
    stacked and, with dynamic masking, masked together (`DynamicMasker`, record i of the epoch with
    the generator [seed, epoch, i])."""

    def __init__(self, spec: DataSpec, seed: int, epoch: int, rows: slice = slice(None)):
        self.decode, self.rows = _Decode(spec), rows
        self.masker = DynamicMasker(spec, seed, epoch) if spec.masking == "dynamic" else None

    def map(self, records):
        edge = getattr(records, "edge", None)
        records = records[self.rows]
        examples = [self.decode(*record) for _, record in records]
        batch = {name: np.stack([example[name] for example in examples]) for name in examples[0]}
        if edge is not None:
            batch |= {name: batch[name][:, :edge] for name in INT_FEATURES_SEQ}
        if self.masker is not None:
            ids, positions, labels, weights = self.masker(
                [position for position, _ in records], batch["input_ids"], batch["token_boundary"]
            )
            batch.update(
                input_ids=ids,
                masked_lm_positions=positions,
                masked_lm_ids=labels,
                masked_lm_weights=weights,
            )
        return batch


class LengthBatch(list):
    """A batch of records of one length bin (`--length-buckets`): decoded, its sequence features
    are cut to the bin's `edge` tokens."""

    def __init__(self, records, edge: int):
        super().__init__(records)
        self.edge = edge


class _LengthBatches(grain.IterDataset):
    """Batches of `size` records of the same length bin (`length_bucket_edges`), in the order
    they fill up as the epoch's records stream past (NVIDIA LDDL's binning); the first `skip`
    batches are dropped (resume) and the epoch's partly filled bins at its end are not trained
    on."""

    def __init__(self, parent, size: int, edges: list[int], skip: int):
        super().__init__(parent)
        self.size, self.edges, self.skip = size, edges, skip

    def __iter__(self):
        return _LengthBatchIterator(self)


class _LengthBatchIterator(grain.DatasetIterator):
    """State: the parent's and the partly filled bins (enough for Grain's prefetch to ask; resume
    rebuilds the epoch from (epoch, batch) instead)."""

    def __init__(self, dataset: _LengthBatches):
        super().__init__(dataset._parent.__iter__())
        self.dataset, self.emitted = dataset, 0
        self.bins: list[list] = [[] for _ in dataset.edges]

    def __next__(self):
        edges, size = self.dataset.edges, self.dataset.size
        while True:
            _, (path, index, record) = element = next(self._parent)
            mask = decode_record(path, index, record, ("input_mask",))["input_mask"]
            bucket = length_bucket(int(np.count_nonzero(mask)), edges)
            chosen = self.bins[bucket]
            chosen.append(element)
            if len(chosen) == size:
                batch = LengthBatch(chosen, edges[bucket])
                chosen.clear()
                self.emitted += 1
                if self.emitted > self.dataset.skip:
                    return batch

    def get_state(self):
        return {"parent": self._parent.get_state(), "emitted": self.emitted}

    def set_state(self, state):
        raise NotImplementedError("resume rebuilds the epoch from (epoch, batch)")


class _EveryNthBatch(grain.IterDataset):
    """The parent's elements `start`, `start + step`, ...: Grain's `mp_prefetch` slices it
    (`set_slice`) so that worker i of n decodes and masks batches i, i + n, ..., and interleaves the
    workers' batches back in order. Every worker reads all records (reading is cheap; decoding and
    masking are not)."""

    def __init__(self, parent: grain.IterDataset):
        super().__init__(parent)
        self.start, self.step = 0, 1

    def set_slice(self, sl: slice, sequential_slice: bool = False) -> None:
        self.start, self.step = sl.start or 0, sl.step or 1

    def __iter__(self):
        return _EveryNthIterator(self)


class _EveryNthIterator(grain.DatasetIterator):
    """State: the parent's, and how many of its elements were read."""

    def __init__(self, dataset: _EveryNthBatch):
        super().__init__(dataset._parent.__iter__())
        self.start, self.step, self.read = dataset.start, dataset.step, 0

    def __next__(self):
        while True:
            element = next(self._parent)
            self.read += 1
            if (self.read - 1) % self.step == self.start:
                return element

    def get_state(self):
        return {"parent": self._parent.get_state(), "read": self.read}

    def set_state(self, state):
        self._parent.set_state(state["parent"])
        self.read = state["read"]


def _records(
    files: list[str], modulus: int, keep_heldout: bool, cycle_length: int
) -> grain.IterDataset:
    shards = [_ShardRecords(path, modulus, keep_heldout) for path in files]
    return grain.experimental.InterleaveIterDataset(
        shards, cycle_length=min(cycle_length, len(files))
    )


def with_denominators(batch: dict) -> dict:
    """The global loss denominators (masked-token weight, sequences) on every example of a batch, as
    `model.pretrain` adds them to tf.data batches."""
    size = len(batch["input_ids"])
    weight = batch["masked_lm_weights"].sum(dtype=np.float32) + np.float32(MLM_DENOMINATOR_EPSILON)
    batch["mlm_denominator"] = np.full(size, weight, np.float32)
    batch["sop_denominator"] = np.full(size, size, np.float32)
    return batch


def train_batches(
    spec: DataSpec,
    batch_size: int,
    *,
    epoch: int,
    seed: int,
    skip_batches: int = 0,
    shuffle_buffer: int = 10_000,
    cycle_length: int = 8,
    eval_every: int = 20,
    denominators: bool = True,
    process: tuple[int, int] = (0, 1),
    workers: int = 0,
    length_buckets: int = 0,
) -> grain.IterDataset:
    """One epoch of training batches (dicts of numpy arrays, drop_remainder), starting
    `skip_batches` into the epoch: `model.pretrain_data.train_dataset`'s batches (with the loss
    denominators).

    `workers`: processes that decode and mask the batches (Grain's `mp_prefetch`, batch k in worker
    k mod n); 0 prepares them in a thread of this process. The batches and their order are the same
    for any number.

    `length_buckets` k > 0: each batch holds records of one of k length bins and is cut to the bin's
    longest length (`_LengthBatches`); `skip_batches` then counts these batches.

    `process` (index i, count n) of a multi-process job: every process reads the same global batches
    of `batch_size` records but decodes and returns only its rows, i*b to (i+1)*b with
    b = batch_size / n, without denominators (those are the global batch's: the JAX step computes
    them)."""
    index, count = process
    rows = batch_size // count
    ordered, modulus = epoch_files(spec, seed, epoch, eval_every)
    windows = _records(ordered, modulus, False, cycle_length).batch(shuffle_buffer, batch_fn=list)
    skip_records = 0 if length_buckets else skip_batches * batch_size
    records = grain.experimental.FlatMapIterDataset(
        windows.map_with_index(lambda number, window: (number, window)),
        _Unwindow(seed, epoch, shuffle_buffer, skip_records),
    )
    if length_buckets:
        edges = length_bucket_edges(spec.max_seq_length, length_buckets)
        records = _LengthBatches(records, batch_size, edges, skip_batches)
    else:
        records = records.batch(batch_size, drop_remainder=True, batch_fn=list)
    batches = _EveryNthBatch(records).map(
        _DecodeRows(spec, seed, epoch, slice(index * rows, (index + 1) * rows))
    )
    if denominators and count == 1:
        batches = batches.map(with_denominators)
    if workers:
        if not flags.FLAGS.is_parsed():  # Grain's worker processes read its absl flags' defaults
            flags.FLAGS.mark_as_parsed()
        options = grain.MultiprocessingOptions(
            num_workers=workers, per_worker_buffer_size=PREFETCH_BATCHES
        )
        return batches.mp_prefetch(options)
    return grain.experimental.ThreadPrefetchIterDataset(
        batches, prefetch_buffer_size=PREFETCH_BATCHES
    )


def heldout_batches(
    spec: DataSpec, batch_size: int, *, seed: int = 0, eval_every: int = 20, max_batches=None
):
    """The held-out records in file order, batched (the last partial batch kept), masked as epoch 0:
    `model.pretrain_data.heldout_dataset`'s batches."""
    _, files, modulus = split_files(spec, eval_every)
    records = _records(files, modulus, True, 1).map_with_index(
        lambda position, record: (position, record)
    )
    batches = records.batch(batch_size, batch_fn=list).map(_DecodeRows(spec, seed, 0))
    if max_batches:
        batches = grain.experimental.LimitIterDataset(batches, count=max_batches)
    return batches
