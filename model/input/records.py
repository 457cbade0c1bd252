"""The pretraining shards without TensorFlow: what they hold (metadata.json + the first record), the
up-front check (framing, CRCs, token ids), the train/held-out split, the epoch's record order and
the dynamic masking of a batch. Both inputs use these: tf.data (`model.input.tf_data`, the
TensorFlow backend) and Grain (`model.input.grain`, the JAX backend, which never imports
TensorFlow).

The order of an epoch `e` (seed `s`), the same in both inputs:
  1. the training shards in the order `shard_order(n, s, e)` (a NumPy permutation): `epoch_files`;
  2. their records interleaved round-robin, one at a time, over `cycle_length` open shards: when a
     shard ends its slot is skipped and refilled with the next shard when the cycle comes back to it
     (tf.data's `interleave` with block_length 1, and Grain's `InterleaveIterDataset`);
  3. with a single shard and no named held-out shards, every `eval_every`-th record left out (held
     out);
  4. consecutive windows of `window` records, each permuted by `window_permutation(s, e, w, size)`.
Record `i` of the epoch is masked (dynamic masking) with the generator `[s, e, i]`.
"""

from __future__ import annotations

import json
import logging
import posixpath
import time
from dataclasses import dataclass, field

import numpy as np
from google.protobuf.message import DecodeError

from albert.batch_masking import mask_batch
from albert.errors import StageError
from albert.fs import exists, expand_files, join, open_file
from albert.hashing import derive_seed
from albert.masking import albert_options
from albert.pretraining_example import FEATURE_NAMES, INT_FEATURES_PRED, decode_example
from albert.tfrecord_framing import tfrecord_records

logger = logging.getLogger(__name__)

PREDICTION_FEATURES = (
    *INT_FEATURES_PRED,
    "masked_lm_weights",
)  # absent from dynamically masked data
MLM_DENOMINATOR_EPSILON = 1e-5
"""Added to a batch's masked-token weight, the masked-LM loss's denominator, so that a batch without
masked tokens divides by it rather than by 0: both inputs' `with_denominators` and the JAX step."""


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
    metadata_path: str | None = None


def shard_files(data: str) -> list[str]:
    """The TFRecord shards of a directory (`*.tfrecord*`), or the files a glob/path names."""
    files = expand_files(data, ("*.tfrecord*",))
    if not files:
        raise StageError(f"{data}: no TFRecord shards found (expected *.tfrecord files)")
    return files


def decode_record(path: str, index: int, record: bytes, names=None) -> dict[str, np.ndarray]:
    """`decode_example`, with a StageError naming the file and record when the bytes are no
    tf.Example."""
    try:
        return decode_example(record, names)
    except DecodeError as error:
        raise StageError(f"{path}: record {index}: not a valid tf.Example ({error})") from None


def _first_example(path: str) -> dict[str, np.ndarray]:
    for record in tfrecord_records(path):
        return decode_record(path, 0, record)
    raise StageError(f"{path}: the shard is empty")


def inspect_data(data: str) -> DataSpec:
    """Read metadata.json and check the first record of the first shard agrees with it.

    Raises StageError naming the file and the disagreement (missing feature, wrong length).
    """
    files = shard_files(data)
    is_pattern = any(c in data for c in "*?[") or data.endswith((".tfrecord", ".tfrecord.gz"))
    metadata_path = join(posixpath.dirname(data) if is_pattern else data, "metadata.json")
    features = _first_example(files[0])
    missing = [
        name for name in FEATURE_NAMES if name not in features and name not in PREDICTION_FEATURES
    ]
    if missing:
        raise StageError(
            f"{files[0]}: record lacks features {missing} (expected {list(FEATURE_NAMES)})"
        )
    seq_len = len(features["input_ids"])
    preds = len(features["masked_lm_positions"]) if "masked_lm_positions" in features else 0
    metadata: dict = {}
    found = exists(metadata_path)
    if found:
        with open_file(metadata_path, "r") as handle:
            metadata = json.load(handle)
        expected_seq = metadata.get("max_seq_length")
        if expected_seq is not None and int(expected_seq) != seq_len:
            raise StageError(
                f"{files[0]}: input_ids has length {seq_len} but {metadata_path} says "
                f"max_seq_length={expected_seq}"
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
            raise StageError(
                f"{files[0]}: {metadata_path} lists features {absent} the records lack"
            )
        for name, declared in listed.items() if isinstance(listed, dict) else ():
            if declared.get("shape") and len(features[name]) != declared["shape"][0]:
                raise StageError(
                    f"{files[0]}: feature {name} has length {len(features[name])}, {metadata_path} "
                    "says "
                    f"{declared['shape'][0]}"
                )
        preds = int(expected_preds or preds)
    else:
        logger.warning(
            "%s: no metadata.json; inferred max_seq_length=%d, max_predictions_per_seq=%d",
            data,
            seq_len,
            preds,
        )
    masking = metadata.get("masking", "static" if preds else "dynamic")
    if masking == "dynamic" and not preds:
        preds = int(metadata.get("max_predictions_per_seq", 20))
    return DataSpec(
        files=files,
        max_seq_length=seq_len,
        max_predictions_per_seq=preds,
        masking=masking,
        vocab_size=metadata.get("vocab_size"),
        vocab_sha256=metadata.get("spm_model_sha256")
        or metadata.get("vocab_sha256")
        or metadata.get("vocab_hash"),
        metadata=metadata,
        metadata_path=metadata_path if found else None,
    )


def check_compatible(
    spec: DataSpec,
    *,
    vocab_size: int,
    max_position_embeddings: int,
    vocab_sha256: str | None,
    vocab_origin: str = "the run's flags",
    spm_model: str | None = None,
) -> None:
    """Clear errors when the data cannot feed the model (vocabulary, sequence length); a vocabulary
    mismatch names the data's metadata.json, and `vocab_origin` (where `vocab_size` came from, e.g.
    `--spm-model PATH`) or `spm_model` (the file hashed to `vocab_sha256`)."""
    where = spec.metadata_path or spec.files[0]
    if spec.vocab_size is not None and int(spec.vocab_size) != int(vocab_size):
        raise StageError(
            f"{where}: data vocabulary has {spec.vocab_size} pieces but the model's "
            f"vocab_size is {vocab_size} (from {vocab_origin})"
        )
    if vocab_sha256 and spec.vocab_sha256 and vocab_sha256 != spec.vocab_sha256:
        raise StageError(
            f"{where}: data was tokenized with SentencePiece model "
            f"sha256={spec.vocab_sha256[:12]}… but {spm_model or 'the run'} has "
            f"sha256={vocab_sha256[:12]}… (different vocabulary)"
        )
    if spec.max_seq_length > max_position_embeddings:
        raise StageError(
            f"data has max_seq_length={spec.max_seq_length} > the model's "
            f"max_position_embeddings={max_position_embeddings}"
        )


# --------------------------------------------------------------------------------------------
# Up-front shard check: TFRecord framing + CRCs, and token ids within the vocabulary

_ID_FEATURES = ("input_ids", "masked_lm_ids")


def check_ids(path: str, index: int, record: bytes, vocab_size: int) -> None:
    """Record `index` of `path` is a tf.Example whose token ids (input_ids, masked_lm_ids) lie in
    [0, vocab_size)."""
    features = decode_record(path, index, record, _ID_FEATURES)
    for name in _ID_FEATURES:
        values = features.get(name)
        if values is None:
            continue
        if not isinstance(values, np.ndarray) or values.dtype != np.int64:
            raise StageError(f"{path}: record {index}: feature {name} is not an int64 list")
        bad = np.flatnonzero((values < 0) | (values >= vocab_size))
        if bad.size:
            raise StageError(
                f"{path}: record {index}: {name} holds id {int(values[bad[0]])}, outside "
                f"the vocabulary of {vocab_size} pieces (metadata.json / the model's vocab_size)"
            )


def check_shards(files: list[str], vocab_size: int) -> dict[str, int]:
    """Scan every shard before training: TFRecord framing and CRCs, and token ids < `vocab_size`.

    Returns the number of records of each file; raises StageError naming the file and record index.
    Costs one sequential read and one protobuf parse of every record (no TensorFlow).
    """
    start, counts = time.perf_counter(), {}
    for path in files:
        count = 0
        for count, record in enumerate(tfrecord_records(path), start=1):
            check_ids(path, count - 1, record, vocab_size)
        counts[path] = count
    logger.info(
        "checked %d records in %d shards (framing, CRCs, ids < %d) in %.1f s",
        sum(counts.values()),
        len(files),
        vocab_size,
        time.perf_counter() - start,
    )
    return counts


def check_heldout_not_empty(spec: DataSpec, counts: dict[str, int], eval_every: int = 20) -> None:
    """Held-out metrics of no records would read as a perfect score: an empty held-out split is
    an error."""
    _, heldout, _ = split_files(spec, eval_every)
    if not sum(counts.get(path, 0) for path in heldout):
        raise StageError(
            f"{', '.join(heldout)}: the held-out split has no records (an empty shard?)"
        )


def named_split(files: list[str], metadata: dict) -> tuple[list[str], list[str]]:
    """(training files, held-out files) of `files` as metadata.json's `heldout.files` names them
    (none named: every file trains)."""
    named = set((metadata.get("heldout") or {}).get("files") or ())
    heldout = [f for f in files if posixpath.basename(f) in named]
    return [f for f in files if f not in heldout], heldout


def split_files(spec: DataSpec, eval_every: int = 20) -> tuple[list[str], list[str], int]:
    """(train files, held-out files, record modulus). Data from `pipelines.tfrecords` names its
    held-out shards (whole documents never trained on) in metadata.json's `heldout.files`. Without
    them (e.g. the reference's own files), the last shard is held out when there are several, and a
    single shard holds out every `eval_every`-th record instead (modulus > 0)."""
    training, heldout = named_split(spec.files, spec.metadata)
    if heldout:
        return training, heldout, 0
    if len(spec.files) > 1:
        return spec.files[:-1], spec.files[-1:], 0
    return spec.files, spec.files, eval_every


def training_files(spec: DataSpec, eval_every: int = 20) -> tuple[list[str], int]:
    """(training files, record modulus) of `split_files`; StageError when everything is held out."""
    files, _, modulus = split_files(spec, eval_every)
    if not files:
        raise StageError(
            f"{spec.files[0]}: the data holds only held-out documents (heldout_fraction 1)"
        )
    return files, modulus


# --------------------------------------------------------------------------------------------
# The epoch's order (see the module docstring) and dynamic masking


def shard_order(num_files: int, seed: int, epoch: int) -> np.ndarray:
    """The order in which epoch `epoch` opens the training shards: a permutation of
    range(num_files)."""
    return np.random.default_rng(derive_seed(seed, epoch)).permutation(num_files)


def epoch_files(
    spec: DataSpec, seed: int, epoch: int, eval_every: int = 20
) -> tuple[list[str], int]:
    """(the training shards in the order epoch `epoch` opens them, record modulus of
    `training_files`)."""
    files, modulus = training_files(spec, eval_every)
    return [files[i] for i in shard_order(len(files), seed, epoch)], modulus


def window_permutation(seed: int, epoch: int, window: int, size: int) -> np.ndarray:
    """The order of the `size` records of window `window` of epoch `epoch` (int64 indices)."""
    return (
        np.random.default_rng(derive_seed(seed, epoch, window)).permutation(size).astype(np.int64)
    )


def length_bucket_edges(max_seq_length: int, buckets: int) -> list[int]:
    """The longest sequence of each of `buckets` length bins of equal width (rounded up to a
    multiple of 8, the last `max_seq_length`): `--length-buckets`' batch lengths."""
    edges = [
        min(max_seq_length, -(-max_seq_length * (k + 1) // buckets // 8) * 8)
        for k in range(buckets)
    ]
    return sorted(set(edges) | {max_seq_length})


def length_bucket(length: int, edges: list[int]) -> int:
    """The bin of a sequence of `length` tokens: the first whose edge is at least `length`."""
    return int(np.searchsorted(edges, length, side="left"))


class DynamicMasker:
    """Masks a batch of examples with the pipeline's n-gram rules (`albert.batch_masking`), record
    `i` of epoch `e` with the generator [seed, e, i] (each row as `albert.masking.mask_tokens`
    would): an epoch's masks are reproducible, differ across epochs and do not depend on how
    records are batched. Returns padded int32 input_ids / positions / labels and float32 weights,
    each [B, ...]."""

    def __init__(self, spec: DataSpec, seed: int, epoch: int):
        meta = spec.metadata
        self.seed, self.epoch, self.preds = seed, epoch, spec.max_predictions_per_seq
        self.options = albert_options(
            int(spec.vocab_size or meta.get("vocab_size") or 30000),
            self.preds,
            float(meta.get("masked_lm_prob", 0.15)),
            int(meta.get("ngram", 3)),
            bool(meta.get("favor_shorter_ngram", True)),
        )

    def __call__(self, indices, input_ids: np.ndarray, token_boundary: np.ndarray):
        generators = [np.random.default_rng([self.seed, self.epoch, int(i)]) for i in indices]
        masked = mask_batch(
            np.asarray(input_ids, np.int64),
            np.asarray(token_boundary, bool),
            generators,
            self.options,
        )
        weights = (np.arange(self.preds) < masked.counts[:, None]).astype(np.float32)
        return (
            masked.masked_ids.astype(np.int32),
            masked.positions.astype(np.int32),
            masked.labels.astype(np.int32),
            weights,
        )
