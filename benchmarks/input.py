"""Pretraining input throughput, side by side: Grain (`model.grain_input`, the JAX backend, no
TensorFlow) against tf.data (`model.pretrain_data`, the TensorFlow backend), over the same generated
shards (seq 512 / 128, 20 predictions), static masks and dynamic masking (`albert.masking` per record),
one epoch of batches each, with the same batches checked equal. Prints one JSON line.

    python benchmarks/input.py [--megabytes 20] [--seqs 128,512] [--batch 32] [--workdir DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

import numpy as np
from machine import cpu_model
from shard_check import generate

from model import grain_input, pretrain_data, pretrain_records


def epoch(batches) -> tuple[float, int, list]:
    start, count, first = time.perf_counter(), 0, []
    for batch in batches:
        if count < 2:
            first.append(batch["input_ids"].copy())
        count += 1
    return time.perf_counter() - start, count, first


def row(directory: Path, seq: int, masking: str, batch: int) -> dict:
    meta = {
        "max_seq_length": seq,
        "max_predictions_per_seq": 20,
        "vocab_size": 30000,
        "masking": masking,
    }
    (directory / "metadata.json").write_text(json.dumps(meta))
    spec = pretrain_records.inspect_data(str(directory))
    options = {"epoch": 0, "seed": 1}
    tf_seconds, tf_batches, tf_first = epoch(
        pretrain_data.train_dataset(spec, batch, **options).as_numpy_iterator()
    )
    grain_seconds, grain_batches, grain_first = epoch(
        grain_input.train_batches(spec, batch, **options)
    )
    assert tf_batches == grain_batches and all(
        np.array_equal(a, b) for a, b in zip(tf_first, grain_first)
    )
    sequences = tf_batches * batch
    return {
        "seq": seq,
        "masking": masking,
        "sequences": sequences,
        "tfdata_seq_per_s": round(sequences / tf_seconds, 1),
        "grain_seq_per_s": round(sequences / grain_seconds, 1),
        "grain_over_tfdata": round(tf_seconds / grain_seconds, 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--megabytes", type=int, default=20)
    parser.add_argument("--seqs", default="128,512")
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--workdir", default=None)
    args = parser.parse_args()
    result: dict = {
        "benchmark": "input",
        "cpu": cpu_model(),
        "cpus": os.cpu_count(),
        "load": os.getloadavg()[0],
        "rows": [],
    }
    with tempfile.TemporaryDirectory(dir=args.workdir) as work:
        for seq in (int(s) for s in args.seqs.split(",")):
            directory = Path(work) / f"s{seq}"
            directory.mkdir()
            generate(directory, args.megabytes, seq=seq)
            for masking in ("static", "dynamic"):
                result["rows"].append(row(directory, seq, masking, args.batch))
    print(json.dumps(result))


if __name__ == "__main__":
    main()
