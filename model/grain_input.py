"""Grain input for pretraining on the JAX backend: never imports TensorFlow.

The same batches, in the same order, as the tf.data input (`model.pretrain_data`) from the same data
and seed: the epoch order of `model.pretrain_records` (shards permuted, interleaved round-robin from
our CRC-checking TFRecord reader, windows permuted) as `model.epoch_order` generates it, records
decoded with `albert.pretraining_example.decode_example` and, with dynamic masking, masked a batch
at a time by the same `DynamicMasker` (record i of epoch e with the generator [seed, e, i]) inside
the Grain map, in this process or in `workers` processes (Grain's `mp_prefetch`).

Resume: the data position is `(epoch, batch index)`, kept in every checkpoint; `train_batches`
rebuilds epoch `epoch` and starts `skip_batches` in (the skipped records are read and permuted, not
decoded or masked). Grain's own iterator state is not saved: (epoch, batch) determines it.
"""

from __future__ import annotations

import functools
import itertools

import grain
import numpy as np
from absl import flags

from albert.errors import StageError
from albert.pretraining_example import INT_FEATURES_PRED, INT_FEATURES_SEQ
from model import epoch_order
from model.pretrain_records import (
    MLM_DENOMINATOR_EPSILON,
    DataSpec,
    DynamicMasker,
    decode_record,
    epoch_files,
    length_bucket_edges,
    split_files,
)

PREFETCH_BATCHES = 2  # batches a background thread prepares ahead of the training step


class _Batches(grain.IterDataset):
    """Source: the batches `make()` generates (a partial of a `model.epoch_order` function, so that
    Grain can send it to worker processes), the first `skip` left out. Grain's `mp_prefetch` slices
    it (`set_slice`): worker i of n keeps batches i, i + n, ... (every worker reads the whole epoch;
    reading is cheap, decoding and masking are not) and Grain interleaves them back in order."""

    def __init__(self, make: functools.partial, skip: int = 0):
        super().__init__()
        self.make, self.skip, self.start, self.step = make, skip, 0, 1

    def set_slice(self, sl: slice, sequential_slice: bool = False) -> None:
        self.start, self.step = sl.start or 0, sl.step or 1

    def __iter__(self):
        return _BatchIterator(self)


class _BatchIterator(grain.DatasetIterator):
    """State: how many batches (after the skipped ones) were generated; set_state regenerates the
    epoch up to there."""

    def __init__(self, dataset: _Batches):
        super().__init__()
        self.dataset = dataset
        self.set_state({"generated": 0})

    def __next__(self):
        start, step = self.dataset.start, self.dataset.step
        for batch in self.batches:
            self.generated += 1
            if (self.generated - 1) % step == start:
                return batch
        raise StopIteration

    def get_state(self):
        return {"generated": self.generated}

    def set_state(self, state):
        self.generated = state["generated"]
        skip = self.dataset.skip + self.generated
        self.batches = itertools.islice(self.dataset.make(), skip, None)


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
    longest length (`epoch_order.length_binned`); `skip_batches` then counts these batches.

    `process` (index i, count n) of a multi-process job: every process reads the same global batches
    of `batch_size` records but decodes and returns only its rows, i*b to (i+1)*b with
    b = batch_size / n, without denominators (those are the global batch's: the JAX step computes
    them)."""
    index, count = process
    rows = batch_size // count
    ordered, modulus = epoch_files(spec, seed, epoch, eval_every)
    edges = length_bucket_edges(spec.max_seq_length, length_buckets) if length_buckets else None
    make = functools.partial(
        epoch_order.training_batches,
        ordered,
        modulus,
        cycle_length,
        seed,
        epoch,
        shuffle_buffer,
        batch_size,
        edges,
    )
    batches = _Batches(make, skip_batches).map(
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
    make = functools.partial(epoch_order.heldout_batches, files, modulus, batch_size)
    batches = _Batches(make).map(_DecodeRows(spec, seed, 0))
    if max_batches:
        batches = grain.experimental.LimitIterDataset(batches, count=max_batches)
    return batches
