"""tf.data input for pretraining (the TensorFlow backend): the TFRecord shards, read in the epoch
order `model.input.records` defines (shards permuted, interleaved round-robin, windows permuted,
all from `(seed, epoch)`), parsed, batched, (optionally) masked on the fly a batch at a time. The
JAX backend reads the same batches in the same order through Grain (`model.input.grain`) without
TensorFlow.

Data position is `(epoch, batch index)`: epoch `e` depends on `(seed, e)` only, so a resumed run
rebuilds the same epoch and skips to the batch where it stopped — the exact batches an uninterrupted
run would have seen."""

from __future__ import annotations

import itertools

import numpy as np
import tensorflow as tf

from albert.pretraining_example import INT_FEATURES_PRED, INT_FEATURES_SEQ
from model.input import epoch_order, packed
from model.input.packing import packed_layout
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
    packing: int = 0,
) -> tf.data.Dataset:
    """One epoch of training batches (drop_remainder), starting `skip_batches` into the epoch;
    `shuffle_buffer` is the window of the window shuffle; `workers` threads parse and mask (0:
    tf.data's AUTOTUNE); the batches are the same for any number. `packing` K > 0: batches of
    packed rows of up to K records (`packed_dataset`)."""
    ordered, modulus = epoch_files(spec, seed, epoch, eval_every)
    if packing:
        order = (ordered, modulus, cycle_length, seed, epoch, shuffle_buffer)
        rows = packed_rows(spec, order, batch_size, packing, skip_batches)
        return packed_dataset(spec, seed, epoch, rows, packing, workers or tf.data.AUTOTUNE)
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


def packed_rows(spec: DataSpec, order: tuple, batch_size: int, instances: int, skip: int):
    """A generator function of the epoch's batches of rows of up to `instances` records
    (`model.input.packed.packed_batches` of `epoch_order.training_records(*order)`: Grain's
    batches) from the `skip`-th on, each as (record positions, paths, indices in their shards,
    records, records per row)."""
    shape, budgets = packed.spec_shape(spec, instances), packed.Budgets(spec)

    def generate():
        records = epoch_order.training_records(*order)
        batches = packed.packed_batches(records, batch_size, shape, budgets)
        for batch in itertools.islice(batches, skip, None):
            flat = [record for row in batch for record in row]
            yield (
                np.array([position for position, _ in flat], np.int64),
                np.array([path for _, (path, _, _) in flat]),
                np.array([index for _, (_, index, _) in flat], np.int64),
                np.array([record for _, (_, _, record) in flat], object),
                np.array([len(row) for row in batch], np.int32),
            )

    return generate


def packed_dataset(spec: DataSpec, seed: int, epoch: int, rows, instances: int, workers):
    """The batches of packed rows `rows` (`packed_rows`' generator) decoded, masked and packed by
    `model.input.packed.PackedDecoder` on `workers` threads (deterministic): the features of
    `model.input.packing`, as the Grain input gives them."""
    shape = packed.spec_shape(spec, instances)
    layout = packed_layout(shape)
    decoder = packed.PackedDecoder(spec, seed)
    signature = tuple(
        tf.TensorSpec([None], dtype)
        for dtype in (tf.int64, tf.string, tf.int64, tf.string, tf.int32)
    )

    def decode(positions, paths, indices, records, sizes):
        flat = [
            (int(p), (path.decode(), int(i), bytes(r)))
            for p, path, i, r in zip(positions, paths, indices, records)
        ]
        bounds = np.cumsum([0, *sizes.tolist()])
        batch = decoder(epoch, [flat[a:b] for a, b in itertools.pairwise(bounds)], shape)
        return [batch[name] for name in layout]

    def apply(*arguments):
        values = tf.numpy_function(
            decode, list(arguments), [tf.as_dtype(dtype) for dtype, _ in layout.values()]
        )
        return {
            name: tf.ensure_shape(value, [None, *dims])
            for (name, (_, dims)), value in zip(layout.items(), values)
        }

    batches = tf.data.Dataset.from_generator(rows, output_signature=signature)
    return batches.map(apply, num_parallel_calls=workers, deterministic=True).prefetch(
        tf.data.AUTOTUNE
    )


def with_denominators(dataset: tf.data.Dataset, batch_size: int) -> tf.data.Dataset:
    """Add the global loss denominators (masked-token weight, instances: the rows, or the packed
    rows' `sop_weights`) to every example of a batch, so that each replica and micro-batch
    normalises by the whole batch's totals."""

    def add(batch):
        batch = dict(batch)
        weight = tf.reduce_sum(batch["masked_lm_weights"]) + MLM_DENOMINATOR_EPSILON
        instances = (
            tf.reduce_sum(batch["sop_weights"])
            if "sop_weights" in batch
            else tf.cast(batch_size, tf.float32)
        )
        batch["mlm_denominator"] = tf.fill([batch_size], weight)
        batch["sop_denominator"] = tf.fill([batch_size], instances)
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
