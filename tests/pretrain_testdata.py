"""Small synthetic pretraining TFRecords in the reference's exact feature format (for model.pretrain
tests).

The SOP label is learnable: label 1 (swapped) sequences start segment A with token 7, label 0 with
6."""

import json
from pathlib import Path

import numpy as np
import tensorflow as tf

from albert.pretraining_example import feature_shapes, feature_spec_json
from albert.tfrecord_framing import tfrecord_frame


def feature_spec(max_seq_length: int, max_predictions_per_seq: int) -> dict:
    """The `tf.io.parse_example` spec of the pretraining format (FixedLenFeature per feature)."""
    return {
        name: tf.io.FixedLenFeature([length], tf.float32 if dtype == "float32" else tf.int64)
        for name, (dtype, length) in feature_shapes(max_seq_length, max_predictions_per_seq).items()
    }


def example(
    rng, seq_len: int, preds: int, vocab: int, dynamic: bool = False, min_length: int = 0
) -> tf.train.Example:
    length = int(rng.integers(min_length or seq_len // 2, seq_len + 1))
    label = int(rng.integers(0, 2))
    ids = np.zeros(seq_len, np.int64)
    ids[:length] = rng.integers(5, vocab, size=length)
    ids[0], ids[1], ids[length - 1] = 2, 6 + label, 3
    split = length // 2
    ids[split] = 3
    segments = np.zeros(seq_len, np.int64)
    segments[split + 1 : length] = 1
    mask = (np.arange(seq_len) < length).astype(np.int64)
    n = min(preds, max(1, int(length * 0.15)))
    positions = np.zeros(preds, np.int64)
    chosen = np.sort(rng.choice(np.arange(2, split), size=min(n, split - 2), replace=False))
    positions[: len(chosen)] = chosen
    labels = np.zeros(preds, np.int64)
    labels[: len(chosen)] = ids[chosen]
    weights = np.zeros(preds, np.float32)
    weights[: len(chosen)] = 1.0
    if dynamic:  # unmasked: model.pretrain masks at training time
        positions[:], labels[:], weights[:] = 0, 0, 0.0
    else:
        ids[chosen] = 4
    feature = {
        "input_ids": ids,
        "input_mask": mask,
        "segment_ids": segments,
        "token_boundary": mask,
        "masked_lm_positions": positions,
        "masked_lm_ids": labels,
    }
    features = {
        k: tf.train.Feature(int64_list=tf.train.Int64List(value=v.tolist()))
        for k, v in feature.items()
    }
    features["masked_lm_weights"] = tf.train.Feature(
        float_list=tf.train.FloatList(value=weights.tolist())
    )
    features["next_sentence_labels"] = tf.train.Feature(
        int64_list=tf.train.Int64List(value=[label])
    )
    return tf.train.Example(features=tf.train.Features(feature=features))


def write_shards(
    directory: Path,
    num_shards=3,
    per_shard=64,
    seq_len=32,
    preds=5,
    vocab=100,
    seed=0,
    metadata: dict | None = None,
    dynamic: bool = False,
    min_length: int = 0,
) -> Path:
    """`num_shards` TFRecord files + metadata.json in `directory`; records of `min_length` (default
    half of `seq_len`) to `seq_len` tokens."""
    directory.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    for shard in range(num_shards):
        with tf.io.TFRecordWriter(
            str(directory / f"train-{shard:05d}-of-{num_shards:05d}.tfrecord")
        ) as writer:
            for _ in range(per_shard):
                record = example(rng, seq_len, preds, vocab, dynamic, min_length)
                writer.write(record.SerializeToString())
    meta = {
        "max_seq_length": seq_len,
        "max_predictions_per_seq": preds,
        "vocab_size": vocab,
        "masking": "dynamic" if dynamic else "static",
        "masked_lm_prob": 0.15,
        "ngram": 3,
        "features": feature_spec_json(seq_len, preds),
    }
    meta.update(metadata or {})
    (directory / "metadata.json").write_text(json.dumps(meta))
    return directory


def pretrain_argv(data, output, settings: dict) -> list[str]:
    """`python -m model.pretrain`'s flags for `settings` (PretrainConfig fields: True is
    `--<flag>`, False `--no-<flag>`)."""
    argv = ["--data", str(data), "--output", str(output)]
    for name, value in settings.items():
        flag = name.replace("_", "-")
        if isinstance(value, bool):
            argv += [f"--{flag}" if value else f"--no-{flag}"]
        else:
            argv += [f"--{flag}", str(value)]
    return argv


def cut_short_first_shard(data: Path) -> Path:
    """Append to the first shard of `data` a record the file ends inside (its framing cut 6 bytes
    short); returns that shard."""
    first = min(data.glob("*.tfrecord"))
    first.write_bytes(first.read_bytes() + tfrecord_frame(b"a record cut short")[:-6])
    return first
