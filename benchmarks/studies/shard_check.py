"""Cost of model.pretrain's up-front shard check (TFRecord framing + CRC32C + ids < vocab) against
reading the same data once with tf.data as training does (parse every feature), on the shared
reference TFRecords and on a generated ~100 MB set (seq 512, 20 predictions). Prints one JSON line.

    python -m benchmarks.studies.shard_check [--megabytes 100] [--workdir DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

import numpy as np
import tensorflow as tf

from albert.pretraining_example import encode_example
from benchmarks.helpers.machine import cpu_model
from model.input import tf_data as pretrain_data

REFERENCE = (
    Path(__file__).resolve().parents[2].parent
    / "shared"
    / "data"
    / "reference"
    / "ref_seq128.tfrecord"
)


def generate(
    directory: Path,
    megabytes: int,
    shards: int = 8,
    seq: int = 512,
    preds: int = 20,
    vocab: int = 30000,
) -> list[str]:
    """Random full-length instances in the pipeline's own format until about `megabytes` are
    written."""
    rng = np.random.default_rng(0)
    files = [str(directory / f"train-{i:05d}-of-{shards:05d}.tfrecord") for i in range(shards)]
    writers = [tf.io.TFRecordWriter(f) for f in files]
    written, index = 0, 0
    segments = np.r_[np.zeros(seq // 2, np.int64), np.ones(seq - seq // 2, np.int64)]
    boundary = np.ones(seq, np.int64)
    while written < megabytes << 20:
        ids = rng.integers(5, vocab, seq)
        positions = np.sort(rng.choice(np.arange(1, seq - 1), preds, replace=False))
        record = encode_example(
            ids, segments, boundary, positions, ids[positions], int(index % 2), seq, preds
        )
        writers[index % shards].write(record)
        written += len(record) + 16
        index += 1
    for writer in writers:
        writer.close()
    return files


def tfdata_epoch_seconds(files: list[str], seq: int, preds: int) -> float:
    """One pass of tf.data over `files` parsing every feature (model.input.tf_data.parse_fn)."""
    parse = pretrain_data.parse_fn(seq, preds)
    dataset = (
        tf.data.TFRecordDataset(files).map(parse, num_parallel_calls=tf.data.AUTOTUNE).batch(256)
    )
    start = time.perf_counter()
    for _ in dataset:
        pass
    return time.perf_counter() - start


def measure(files: list[str], vocab: int, seq: int, preds: int) -> dict:
    size = sum(os.path.getsize(f) for f in files)
    start = time.perf_counter()
    counts = pretrain_data.check_shards(files, vocab)
    scan = time.perf_counter() - start
    epoch = tfdata_epoch_seconds(files, seq, preds)
    return {
        "files": len(files),
        "records": sum(counts.values()),
        "megabytes": round(size / 2**20, 1),
        "check_seconds": round(scan, 2),
        "check_MB_per_s": round(size / 2**20 / scan, 1),
        "tfdata_parse_epoch_seconds": round(epoch, 2),
        "check_over_tfdata_parse": round(scan / epoch, 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--megabytes", type=int, default=100)
    parser.add_argument("--workdir", default=None)
    args = parser.parse_args()
    result: dict = {"benchmark": "shard_check", "cpu": cpu_model(), "cpus": os.cpu_count()}
    if REFERENCE.is_file():
        result["reference"] = measure([str(REFERENCE)], 16000, 128, 20)
    with tempfile.TemporaryDirectory(dir=args.workdir) as work:
        start = time.perf_counter()
        files = generate(Path(work), args.megabytes)
        result["generation_seconds"] = round(time.perf_counter() - start, 1)
        result["generated"] = measure(files, 30000, 512, 20)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
