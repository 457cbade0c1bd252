"""tf.data input for pretraining (the TensorFlow backend): the TFRecord shards, read in the epoch
order `model.input.records` defines (shards permuted, interleaved round-robin, windows permuted,
all from `(seed, epoch)`), parsed, batched, (optionally) masked on the fly a batch at a time. The
JAX backend reads the same batches in the same order through Grain (`model.input.grain`) without
TensorFlow.

Data position is `(epoch, batch index)`: epoch `e` depends on `(seed, e)` only, so a resumed run
rebuilds the same epoch and skips to the batch where it stopped — the exact batches an uninterrupted
run would have seen."""

from __future__ import annotations

import tensorflow as tf

from albert.pretraining_example import INT_FEATURES_PRED, INT_FEATURES_SEQ
from model.input.records import (
    MLM_DENOMINATOR_EPSILON,
    DataSpec,
    DynamicMasker,
    check_compatible,
    check_heldout_not_empty,
    check_shards,
    epoch_files,
    inspect_data,
    split_files,
    window_permutation,
)

__all__ = [
    "DataSpec",
    "check_compatible",
    "check_heldout_not_empty",
    "check_shards",
    "heldout_dataset",
    "inspect_data",
    "parse_fn",
    "split_files",
    "train_dataset",
    "with_denominators",
]


def _compression(path: str) -> str:
    return "GZIP" if path.endswith(".gz") else ""


def parse_fn(seq_len: int, preds: int, batched: bool = False):
    """tf.Example (a batch of them, `batched`) -> dict of int32/float32 tensors (the reference's
    feature spec)."""
    spec = {name: tf.io.FixedLenFeature([seq_len], tf.int64) for name in INT_FEATURES_SEQ}
    spec["next_sentence_labels"] = tf.io.FixedLenFeature([1], tf.int64)
    if preds:
        spec.update({name: tf.io.FixedLenFeature([preds], tf.int64) for name in INT_FEATURES_PRED})
        spec["masked_lm_weights"] = tf.io.FixedLenFeature([preds], tf.float32)

    def parse(serialized):
        parsed = (tf.io.parse_example if batched else tf.io.parse_single_example)(serialized, spec)
        return {k: v if v.dtype == tf.float32 else tf.cast(v, tf.int32) for k, v in parsed.items()}

    return parse


def _records(files: list[str], modulus: int, keep_heldout: bool, cycle_length: int):
    """The records of `files` in that order, interleaved round-robin over `cycle_length` open files
    (the order `model.input.records` defines); with a modulus, keep only the held-out (or only
    the training) records."""
    records = tf.data.Dataset.from_tensor_slices(files).interleave(
        lambda f: tf.data.TFRecordDataset(f, compression_type=_compression(files[0])),
        cycle_length=min(cycle_length, len(files)),
        block_length=1,
        num_parallel_calls=tf.data.AUTOTUNE,
        deterministic=True,  # the sequential interleave's order, files read in parallel
    )
    if modulus:
        records = records.enumerate().filter(
            lambda i, _: tf.equal(i % modulus, 0) if keep_heldout else tf.not_equal(i % modulus, 0)
        )
        records = records.map(lambda _, r: r)
    return records


def _window_shuffle(records, seed: int, epoch: int, window: int):
    """Each run of `window` consecutive records permuted by `window_permutation(seed, epoch, w,
    size)`."""

    def permute(index, block):
        order = tf.numpy_function(
            lambda w, size: window_permutation(seed, epoch, int(w), int(size)),
            [index, tf.size(block)],
            tf.int64,
        )
        return tf.gather(block, order)

    return records.batch(window).enumerate().map(permute).unbatch()


def dynamic_masker(spec: DataSpec, seed: int, epoch: int):
    """A tf.data map function (indices, batch) -> batch masked by `DynamicMasker` (a numpy function
    over the whole batch)."""
    masker = DynamicMasker(spec, seed, epoch)
    preds, seq_len = spec.max_predictions_per_seq, spec.max_seq_length

    def apply(indices, batch):
        ids, pos, lab, weights = tf.numpy_function(
            masker,
            [indices, batch["input_ids"], batch["token_boundary"]],
            [tf.int32, tf.int32, tf.int32, tf.float32],
        )
        batch = dict(batch)
        batch["input_ids"] = tf.ensure_shape(ids, [None, seq_len])
        batch["masked_lm_positions"] = tf.ensure_shape(pos, [None, preds])
        batch["masked_lm_ids"] = tf.ensure_shape(lab, [None, preds])
        batch["masked_lm_weights"] = tf.ensure_shape(weights, [None, preds])
        return batch

    return apply


def _batches(
    spec: DataSpec,
    records,
    seed: int,
    epoch: int,
    batch_size: int,
    *,
    skip: int = 0,
    drop_remainder: bool = False,
    workers=tf.data.AUTOTUNE,
):
    """Records -> parsed batches, (dynamically) masked a batch at a time on `workers` threads; the
    first `skip` records are dropped before parsing (masking still counts them: record i of the
    epoch keeps its generator)."""
    parse = parse_fn(
        spec.max_seq_length,
        0 if spec.masking == "dynamic" else spec.max_predictions_per_seq,
        batched=True,
    )
    indexed = records.enumerate()
    if skip:
        indexed = indexed.skip(skip)
    batches = indexed.batch(batch_size, drop_remainder=drop_remainder).map(
        lambda i, r: (i, parse(r)), num_parallel_calls=workers, deterministic=True
    )
    if spec.masking == "dynamic":
        return batches.map(
            dynamic_masker(spec, seed, epoch), num_parallel_calls=workers, deterministic=True
        )
    return batches.map(lambda _, batch: batch)


def train_dataset(
    spec: DataSpec,
    batch_size: int,
    *,
    epoch: int,
    seed: int,
    skip_batches: int = 0,
    shuffle_buffer: int = 10_000,
    cycle_length: int = 8,
    eval_every: int = 20,
    workers: int = 0,
) -> tf.data.Dataset:
    """One epoch of training batches (drop_remainder), starting `skip_batches` into the epoch;
    `shuffle_buffer` is the window of the window shuffle; `workers` threads parse and mask (0:
    tf.data's AUTOTUNE); the batches are the same for any number."""
    ordered, modulus = epoch_files(spec, seed, epoch, eval_every)
    records = _window_shuffle(
        _records(ordered, modulus, False, cycle_length), seed, epoch, shuffle_buffer
    )
    batches = _batches(
        spec,
        records,
        seed,
        epoch,
        batch_size,
        skip=skip_batches * batch_size,
        drop_remainder=True,
        workers=workers or tf.data.AUTOTUNE,
    )
    return batches.prefetch(tf.data.AUTOTUNE)


def with_denominators(dataset: tf.data.Dataset, batch_size: int) -> tf.data.Dataset:
    """Add the global loss denominators (masked-token weight, sequences) to every example of a
    batch, so that each replica and micro-batch normalises by the whole batch's totals."""

    def add(batch):
        batch = dict(batch)
        weight = tf.reduce_sum(batch["masked_lm_weights"]) + MLM_DENOMINATOR_EPSILON
        batch["mlm_denominator"] = tf.fill([batch_size], weight)
        batch["sop_denominator"] = tf.fill([batch_size], tf.cast(batch_size, tf.float32))
        return batch

    return dataset.map(add)


def heldout_dataset(
    spec: DataSpec, batch_size: int, *, seed: int = 0, eval_every: int = 20, max_batches=None
):
    """The held-out records in file order, batched (the last partial batch kept), masked as epoch
    0."""
    _, files, modulus = split_files(spec, eval_every)
    batches = _batches(spec, _records(files, modulus, True, 1), seed, 0, batch_size)
    if max_batches:
        batches = batches.take(max_batches)
    return batches.prefetch(tf.data.AUTOTUNE)
