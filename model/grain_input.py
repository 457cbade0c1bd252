"""Grain input for pretraining on the JAX backend: never imports TensorFlow.

The same batches, in the same order, as the tf.data input (`model.pretrain_data`) from the same data
and seed: the epoch order of `model.pretrain_records` (shards permuted, Grain's round-robin
`InterleaveIterDataset` over our CRC-checking TFRecord reader, windows permuted), records decoded with
`albert.pretraining_example.decode_example` and, with dynamic masking, masked by the same
`DynamicMasker` (record i of epoch e with the generator [seed, e, i]) inside the Grain map.

Resume: the data position is `(epoch, batch index)`, kept in every checkpoint; `train_batches`
rebuilds epoch `epoch` and starts `skip_batches` in (the skipped records are read and permuted, not
decoded or masked). Grain's own iterator state is not saved: (epoch, batch) determines it.
"""

from __future__ import annotations

import itertools

import grain
import numpy as np

from albert.errors import StageError
from albert.pretraining_example import INT_FEATURES_PRED, INT_FEATURES_SEQ
from albert.tfrecord_framing import tfrecord_records
from model.pretrain_records import (
    MLM_DENOMINATOR_EPSILON,
    DataSpec,
    DynamicMasker,
    decode_record,
    epoch_files,
    split_files,
    window_permutation,
)

PREFETCH_BATCHES = 2  # batches a background thread prepares ahead of the training step


class _ShardRecords(grain.IterDataset):
    """(path, index, serialized record) of one TFRecord shard; with a modulus, only the records whose
    index is a multiple of it (keep_heldout) or only the others."""

    def __init__(self, path: str, modulus: int = 0, keep_heldout: bool = False):
        super().__init__()
        self.path, self.modulus, self.keep_heldout = path, modulus, keep_heldout

    def __iter__(self):
        return _ShardIterator(self)


class _ShardIterator(grain.DatasetIterator):
    """State: how many records of the shard were read (set_state reopens the file and reads past them)."""

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
    """A window of records -> its records permuted by `window_permutation`, each with its index in the
    epoch; records before `skip` are dropped."""

    def __init__(self, seed: int, epoch: int, window: int, skip: int):
        self.seed, self.epoch, self.max_fan_out, self.skip = seed, epoch, window, skip

    def flat_map(self, indexed_window):
        number, records = indexed_window
        first = number * self.max_fan_out
        if first + len(records) <= self.skip:
            return []
        order = window_permutation(self.seed, self.epoch, number, len(records))
        return [(first + k, records[i]) for k, i in enumerate(order) if first + k >= self.skip]


class _Decode(grain.transforms.Map):
    """(epoch index, (path, index, record)) -> the example tf.data's `parse_fn` (+ masker) gives:
    int32 features, float32 masked_lm_weights, fixed lengths checked."""

    def __init__(self, spec: DataSpec, seed: int, epoch: int):
        seq, preds = spec.max_seq_length, spec.max_predictions_per_seq
        self.lengths = {name: seq for name in INT_FEATURES_SEQ} | {"next_sentence_labels": 1}
        self.masker = DynamicMasker(spec, seed, epoch) if spec.masking == "dynamic" else None
        if self.masker is None:
            self.lengths |= {name: preds for name in (*INT_FEATURES_PRED, "masked_lm_weights")}

    def map(self, element):
        position, (path, index, record) = element
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
        if self.masker is not None:
            ids, positions, labels, weights = self.masker(
                position, example["input_ids"], example["token_boundary"]
            )
            example.update(
                input_ids=ids,
                masked_lm_positions=positions,
                masked_lm_ids=labels,
                masked_lm_weights=weights,
            )
        return example


class _DecodeRows(grain.transforms.Map):
    """A global batch of undecoded records -> its rows `rows` decoded (`_Decode`) and stacked."""

    def __init__(self, decode: _Decode, rows: slice):
        self.decode, self.rows = decode, rows

    def map(self, records):
        examples = [self.decode.map(record) for record in records[self.rows]]
        return {name: np.stack([example[name] for example in examples]) for name in examples[0]}


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
) -> grain.IterDataset:
    """One epoch of training batches (dicts of numpy arrays, drop_remainder), starting `skip_batches`
    into the epoch: `model.pretrain_data.train_dataset`'s batches (with the loss denominators).

    `process` (index i, count n) of a multi-process job: every process reads the same global batches
    of `batch_size` records but decodes and returns only its rows, i*b to (i+1)*b with
    b = batch_size / n, without denominators (those are the global batch's: the JAX step computes
    them).
    """
    index, count = process
    rows = batch_size // count
    ordered, modulus = epoch_files(spec, seed, epoch, eval_every)
    windows = _records(ordered, modulus, False, cycle_length).batch(shuffle_buffer, batch_fn=list)
    records = grain.experimental.FlatMapIterDataset(
        windows.map_with_index(lambda number, window: (number, window)),
        _Unwindow(seed, epoch, shuffle_buffer, skip_batches * batch_size),
    )
    batches = records.batch(batch_size, drop_remainder=True, batch_fn=list).map(
        _DecodeRows(_Decode(spec, seed, epoch), slice(index * rows, (index + 1) * rows))
    )
    if denominators and count == 1:
        batches = batches.map(with_denominators)
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
    batches = records.map(_Decode(spec, seed, 0)).batch(batch_size)
    if max_batches:
        batches = grain.experimental.LimitIterDataset(batches, count=max_batches)
    return batches
