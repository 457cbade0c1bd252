"""tf.data input for pretraining: the TFRecord shards checked against `metadata.json`, parsed,
interleaved, shuffled per epoch with a derived seed, (optionally) masked on the fly, batched.

Data position is `(epoch, batch index)`: epoch `e` reads the shards in an order and with a shuffle
seed derived from `(seed, e)` only, so a resumed run rebuilds the same epoch and skips to the batch
where it stopped — the exact batches an uninterrupted run would have seen.
"""

from __future__ import annotations

import json
import logging
import posixpath
import time
from dataclasses import dataclass, field

import numpy as np
import tensorflow as tf

from albert import fileio
from albert.hashing import derive_seed
from albert.pretraining_example import FEATURE_NAMES, INT_FEATURES_PRED, INT_FEATURES_SEQ
from albert.stage import StageError
from albert.tfrecord_framing import tfrecord_records

logger = logging.getLogger(__name__)

PREDICTION_FEATURES = (*INT_FEATURES_PRED, "masked_lm_weights")  # absent from dynamically masked data


@dataclass
class DataSpec:
    """What the shards hold, from metadata.json (or inferred from the first record without one)."""

    files: list[str]
    max_seq_length: int
    max_predictions_per_seq: int
    masking: str = "static"
    vocab_size: int | None = None
    vocab_sha256: str | None = None
    metadata: dict = field(default_factory=dict)


def shard_files(data: str) -> list[str]:
    """The TFRecord shards of a directory (`*.tfrecord*`), or the files a glob/path names."""
    files = fileio.expand_files(data, ("*.tfrecord*",))
    if not files:
        raise StageError(f"{data}: no TFRecord shards found (expected *.tfrecord files)")
    return files


def _first_example(path: str) -> tf.train.Example:
    for raw in tf.data.TFRecordDataset(path, compression_type=_compression(path)).take(1):
        return tf.train.Example.FromString(raw.numpy())
    raise StageError(f"{path}: the shard is empty")


def _compression(path: str) -> str:
    return "GZIP" if path.endswith(".gz") else ""


def inspect_data(data: str) -> DataSpec:
    """Read metadata.json and check the first record of the first shard agrees with it.

    Raises StageError naming the file and the disagreement (missing feature, wrong length).
    """
    files = shard_files(data)
    is_pattern = any(c in data for c in "*?[") or data.endswith((".tfrecord", ".tfrecord.gz"))
    metadata_path = fileio.join(posixpath.dirname(data) if is_pattern else data, "metadata.json")
    example = _first_example(files[0])
    features = example.features.feature
    missing = [name for name in FEATURE_NAMES if name not in features and name not in PREDICTION_FEATURES]
    if missing:
        raise StageError(f"{files[0]}: record lacks features {missing} (expected {list(FEATURE_NAMES)})")
    seq_len = len(features["input_ids"].int64_list.value)
    preds = len(features["masked_lm_positions"].int64_list.value) if "masked_lm_positions" in features else 0
    metadata: dict = {}
    if fileio.exists(metadata_path):
        with fileio.open_file(metadata_path, "r") as handle:
            metadata = json.load(handle)
        expected_seq = metadata.get("max_seq_length")
        if expected_seq is not None and int(expected_seq) != seq_len:
            raise StageError(
                f"{files[0]}: input_ids has length {seq_len} but {metadata_path} says max_seq_length={expected_seq}"
            )
        expected_preds = metadata.get("max_predictions_per_seq")
        if expected_preds is not None and preds and int(expected_preds) != preds:
            raise StageError(
                f"{files[0]}: masked_lm_positions has length {preds} but {metadata_path} says "
                f"max_predictions_per_seq={expected_preds}"
            )
        listed = metadata.get("features") or {}
        absent = sorted(set(listed) - set(features))
        if absent:
            raise StageError(f"{files[0]}: {metadata_path} lists features {absent} the records lack")
        for name, declared in (listed.items() if isinstance(listed, dict) else ()):
            values = features[name].int64_list.value or features[name].float_list.value
            if declared.get("shape") and len(values) != declared["shape"][0]:
                raise StageError(
                    f"{files[0]}: feature {name} has length {len(values)}, {metadata_path} says {declared['shape'][0]}"
                )
        preds = int(expected_preds or preds)
    else:
        logger.warning("%s: no metadata.json; inferred max_seq_length=%d, max_predictions_per_seq=%d", data, seq_len, preds)
    masking = metadata.get("masking", "static" if preds else "dynamic")
    if masking == "dynamic" and not preds:
        preds = int(metadata.get("max_predictions_per_seq", 20))
    return DataSpec(
        files=files,
        max_seq_length=seq_len,
        max_predictions_per_seq=preds,
        masking=masking,
        vocab_size=metadata.get("vocab_size"),
        vocab_sha256=metadata.get("spm_model_sha256") or metadata.get("vocab_sha256") or metadata.get("vocab_hash"),
        metadata=metadata,
    )


def check_compatible(spec: DataSpec, *, vocab_size: int, max_position_embeddings: int, vocab_sha256: str | None) -> None:
    """Clear errors when the data cannot feed the model (vocabulary, sequence length)."""
    if spec.vocab_size is not None and int(spec.vocab_size) != int(vocab_size):
        raise StageError(f"data vocabulary has {spec.vocab_size} pieces but the model's vocab_size is {vocab_size}")
    if vocab_sha256 and spec.vocab_sha256 and vocab_sha256 != spec.vocab_sha256:
        raise StageError(
            f"data was tokenized with SentencePiece model sha256={spec.vocab_sha256[:12]}… but the run expects "
            f"{vocab_sha256[:12]}… (different vocabulary)"
        )
    if spec.max_seq_length > max_position_embeddings:
        raise StageError(
            f"data has max_seq_length={spec.max_seq_length} > the model's max_position_embeddings={max_position_embeddings}"
        )


# --------------------------------------------------------------------------------------------
# Up-front shard check: TFRecord framing + CRCs, and token ids within the vocabulary

SCAN_BATCH = 4096


_ID_FEATURES = ("input_ids", "masked_lm_ids")


def _unparsable(records: list[bytes], first_index: int, error: Exception) -> str:
    """Which of `records` is not a tf.Example with int64 ids, and why (for the error message)."""
    from google.protobuf.message import DecodeError

    for offset, record in enumerate(records):
        try:
            example = tf.train.Example.FromString(record)
        except DecodeError as decode_error:
            return f"record {first_index + offset}: not a valid tf.Example ({decode_error})"
        for name in _ID_FEATURES:
            feature = example.features.feature.get(name)
            if feature is not None and feature.WhichOneof("kind") != "int64_list":
                return f"record {first_index + offset}: feature {name} is not an int64 list"
    reason = str(error).splitlines()[0] if isinstance(error, tf.errors.OpError) else type(error).__name__
    return f"records {first_index}-{first_index + len(records) - 1}: cannot be parsed ({reason})"


def _check_ids(path: str, records: list[bytes], first_index: int, vocab_size: int) -> None:
    """Every token id of `records` (input_ids, masked_lm_ids) lies in [0, vocab_size)."""
    spec = {name: tf.io.VarLenFeature(tf.int64) for name in _ID_FEATURES}
    try:
        parsed = tf.io.parse_example(tf.constant(records), spec)
    except (tf.errors.InvalidArgumentError, UnicodeDecodeError) as error:  # TF's message may quote the bytes
        raise StageError(f"{path}: {_unparsable(records, first_index, error)}") from None
    for name in _ID_FEATURES:
        values, rows = parsed[name].values.numpy(), parsed[name].indices.numpy()[:, 0]
        bad = np.flatnonzero((values < 0) | (values >= vocab_size))
        if bad.size:
            raise StageError(
                f"{path}: record {first_index + int(rows[bad[0]])}: {name} holds id {int(values[bad[0]])}, outside "
                f"the vocabulary of {vocab_size} pieces (metadata.json / the model's vocab_size)"
            )


def check_shards(files: list[str], vocab_size: int) -> dict[str, int]:
    """Scan every shard before training: TFRecord framing and CRCs, and token ids < `vocab_size`.

    Returns the number of records of each file; raises StageError naming the file and record index.
    Costs one sequential read of the data (CRC32C in C, ids parsed in batches by TensorFlow).
    """
    start, counts = time.perf_counter(), {}
    for path in files:
        batch: list[bytes] = []
        count = 0
        for record in tfrecord_records(path):
            batch.append(record)
            if len(batch) == SCAN_BATCH:
                _check_ids(path, batch, count, vocab_size)
                count, batch = count + len(batch), []
        if batch:
            _check_ids(path, batch, count, vocab_size)
            count += len(batch)
        counts[path] = count
    logger.info("checked %d records in %d shards (framing, CRCs, ids < %d) in %.1f s",
                sum(counts.values()), len(files), vocab_size, time.perf_counter() - start)
    return counts


def check_heldout_not_empty(spec: DataSpec, counts: dict[str, int], eval_every: int = 20) -> None:
    """Held-out metrics of no records would read as a perfect score: an empty held-out split is an error."""
    _, heldout, _ = split_files(spec, eval_every)
    if not sum(counts.get(path, 0) for path in heldout):
        raise StageError(f"{', '.join(heldout)}: the held-out split has no records (an empty shard?)")


def split_files(spec: DataSpec, eval_every: int = 20) -> tuple[list[str], list[str], int]:
    """(train files, held-out files, record modulus). Data from `pipelines.tfrecords` names its
    held-out shards (whole documents never trained on) in metadata.json's `heldout.files`. Without
    them (e.g. the reference's own files), the last shard is held out when there are several, and a
    single shard holds out every `eval_every`-th record instead (modulus > 0)."""
    named = set((spec.metadata.get("heldout") or {}).get("files") or ())
    heldout = [f for f in spec.files if posixpath.basename(f) in named]
    if heldout:
        return [f for f in spec.files if posixpath.basename(f) not in named], heldout, 0
    if len(spec.files) > 1:
        return spec.files[:-1], spec.files[-1:], 0
    return spec.files, spec.files, eval_every


def parse_fn(seq_len: int, preds: int):
    """tf.Example -> dict of int32/float32 tensors (the reference's feature spec)."""
    spec = {name: tf.io.FixedLenFeature([seq_len], tf.int64) for name in INT_FEATURES_SEQ}
    spec["next_sentence_labels"] = tf.io.FixedLenFeature([1], tf.int64)
    if preds:
        spec.update({name: tf.io.FixedLenFeature([preds], tf.int64) for name in INT_FEATURES_PRED})
        spec["masked_lm_weights"] = tf.io.FixedLenFeature([preds], tf.float32)

    def parse(serialized):
        parsed = tf.io.parse_single_example(serialized, spec)
        return {k: v if v.dtype == tf.float32 else tf.cast(v, tf.int32) for k, v in parsed.items()}

    return parse


def _records(files: list[str], seed: int | None, modulus: int, keep_heldout: bool, cycle_length: int):
    """Interleaved records; with a modulus, keep only the held-out (or only the training) records."""
    files_ds = tf.data.Dataset.from_tensor_slices(files)
    if seed is not None:
        files_ds = files_ds.shuffle(len(files), seed=seed)
    compression = _compression(files[0])
    records = files_ds.interleave(
        lambda f: tf.data.TFRecordDataset(f, compression_type=compression),
        cycle_length=min(cycle_length, len(files)),
        num_parallel_calls=tf.data.AUTOTUNE,
        deterministic=True,
    )
    if modulus:
        records = records.enumerate().filter(
            lambda i, _: tf.equal(i % modulus, 0) if keep_heldout else tf.not_equal(i % modulus, 0)
        )
        records = records.map(lambda _, r: r)
    return records


def dynamic_masker(spec: DataSpec, seed: int, epoch: int):
    """A tf.data map function masking each example with the pipeline's n-gram rules, seeded by
    (seed, epoch, example index) so an epoch's masks are reproducible and differ across epochs."""
    from albert.masking import mask_tokens  # the pipeline's pure masking function

    meta = spec.metadata
    preds, seq_len = spec.max_predictions_per_seq, spec.max_seq_length
    vocab_size = int(spec.vocab_size or meta.get("vocab_size") or 30000)

    def mask_numpy(index, input_ids, token_boundary):
        rng = np.random.default_rng([seed, epoch, int(index)])
        masked = mask_tokens(
            input_ids,
            token_boundary,
            rng,
            vocab_size=vocab_size,
            max_predictions_per_seq=preds,
            masked_lm_prob=float(meta.get("masked_lm_prob", 0.15)),
            ngram=int(meta.get("ngram", 3)),
            favor_shorter_ngram=bool(meta.get("favor_shorter_ngram", True)),
        )
        count = len(masked.positions)
        positions, labels, weights = np.zeros(preds, np.int32), np.zeros(preds, np.int32), np.zeros(preds, np.float32)
        positions[:count], labels[:count], weights[:count] = masked.positions, masked.labels, 1.0
        return masked.masked_ids.astype(np.int32), positions, labels, weights

    def apply(index, example):
        ids, pos, lab, weights = tf.numpy_function(
            mask_numpy,
            [index, example["input_ids"], example["token_boundary"]],
            [tf.int32, tf.int32, tf.int32, tf.float32],
        )
        example = dict(example)
        example["input_ids"] = tf.ensure_shape(ids, [seq_len])
        example["masked_lm_positions"] = tf.ensure_shape(pos, [preds])
        example["masked_lm_ids"] = tf.ensure_shape(lab, [preds])
        example["masked_lm_weights"] = tf.ensure_shape(weights, [preds])
        return example

    return apply


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
) -> tf.data.Dataset:
    """One epoch of training batches (drop_remainder), starting `skip_batches` into the epoch."""
    files, _, modulus = split_files(spec, eval_every)
    if not files:
        raise StageError(f"{spec.files[0]}: the data holds only held-out documents (heldout_fraction 1)")
    epoch_seed = derive_seed(seed, epoch)
    records = _records(files, epoch_seed, modulus, False, cycle_length)
    examples = records.shuffle(shuffle_buffer, seed=epoch_seed, reshuffle_each_iteration=False)
    examples = examples.map(parse_fn(spec.max_seq_length, 0 if spec.masking == "dynamic" else spec.max_predictions_per_seq),
                            num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
    if spec.masking == "dynamic":
        examples = examples.enumerate().map(dynamic_masker(spec, seed, epoch), num_parallel_calls=tf.data.AUTOTUNE,
                                            deterministic=True)
    batches = examples.batch(batch_size, drop_remainder=True)
    if skip_batches:
        batches = batches.skip(skip_batches)
    return batches.prefetch(tf.data.AUTOTUNE)


def heldout_dataset(spec: DataSpec, batch_size: int, *, seed: int = 0, eval_every: int = 20, max_batches=None):
    """The held-out records in file order, batched (the last partial batch kept)."""
    _, files, modulus = split_files(spec, eval_every)
    examples = _records(files, None, modulus, True, 1).map(
        parse_fn(spec.max_seq_length, 0 if spec.masking == "dynamic" else spec.max_predictions_per_seq)
    )
    if spec.masking == "dynamic":
        examples = examples.enumerate().map(dynamic_masker(spec, seed, 0))
    batches = examples.batch(batch_size)
    if max_batches:
        batches = batches.take(max_batches)
    return batches.prefetch(tf.data.AUTOTUNE)
