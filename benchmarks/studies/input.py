"""Pretraining input throughput: Grain (`model.input.grain`, the JAX backend) and tf.data
(`model.input.tf_data`, the TensorFlow backend) with 0, 1 and 2 input workers (`--input-workers`:
Grain worker processes, tf.data map threads; 0 = prepared in the training process), static and
dynamic masking, over generated full-length shards (20 predictions); the batches of every row are
checked equal. sequences/s are the steady rate from the first batch to the last; once an epoch,
`first_batch_s` (worker processes start and read the first window) and `end_of_epoch_s` (they shut
down) are apart from it. Then the masker alone (`albert.masking.mask_tokens` per
record against `albert.batch_masking.mask_batch`), and with `--real DIR`, what `--length-buckets`
saves on real shards in padding tokens per batch. One JSON line per row, with the CPU model and
load.

Goals (issue 27, on a 2-core machine): dynamic masking with 2 workers on both inputs
>= 8,000 sequences/s at s128 and >= 5,000 at s512; 2 workers >= 1.7x 1 worker.

    python -m benchmarks.studies.input [--megabytes 10] [--seqs 128,512] [--batch 32]
        [--workdir DIR] [--real DIR ...] [--length-buckets 4]
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

import numpy as np

from albert import batch_masking, masking
from albert.pretraining_example import decode_example
from albert.tfrecord_framing import tfrecord_records
from benchmarks.helpers.machine import cpu_model
from benchmarks.studies.shard_check import generate
from model.input import grain as grain_input
from model.input import records as pretrain_records
from model.input import tf_data as pretrain_data

GOALS = {("dynamic", 128): 8000, ("dynamic", 512): 5000}
SCALING_GOAL = 1.7


def emit(row: dict) -> None:
    print(
        json.dumps({"cpu": cpu_model(), "cpus": os.cpu_count(), "load": os.getloadavg()[0], **row}),
        flush=True,
    )


def epoch(batches) -> tuple[float, int, list, int, float, float]:
    """(seconds from the first batch to the last, batches, the first two batches' input_ids, padding
    tokens, seconds to the first batch: starting worker processes, filling the first window, and
    seconds from the last batch to the epoch's end: worker processes shutting down) of one pass."""
    start, count, first, padding = time.perf_counter(), 0, [], 0
    first_at = last_at = start
    for batch in batches:
        last_at = time.perf_counter()
        if count < 2:
            first.append(batch["input_ids"].copy())
        if count == 0:
            first_at = last_at
        padding += int(batch["input_mask"].size - batch["input_mask"].sum())
        count += 1
    end = time.perf_counter()
    return last_at - first_at, count, first, padding, first_at - start, end - last_at


def write_metadata(directory: Path, seq: int, masking_kind: str) -> pretrain_records.DataSpec:
    meta = {
        "max_seq_length": seq,
        "max_predictions_per_seq": 20,
        "vocab_size": 30000,
        "masking": masking_kind,
    }
    (directory / "metadata.json").write_text(json.dumps(meta))
    return pretrain_records.inspect_data(str(directory))


def input_rows(spec, seq: int, masking_kind: str, batch: int) -> None:
    """One row per input and worker count; every pass's first batches equal the first pass's."""
    options, reference, seconds_at = {"epoch": 0, "seed": 1}, None, {}
    for workers in (0, 1, 2):
        for name in ("grain", "tf.data"):
            if name == "grain":
                batches = grain_input.train_batches(spec, batch, workers=workers, **options)
            else:
                dataset = pretrain_data.train_dataset(spec, batch, workers=workers, **options)
                batches = dataset.as_numpy_iterator()
            seconds, count, first, _, to_first, to_end = epoch(batches)
            reference = reference or (count, first)
            assert count == reference[0] and all(
                np.array_equal(a, b) for a, b in zip(first, reference[1])
            ), (name, workers)
            seconds_at[name, workers] = seconds
            row = {
                "row": "input",
                "input": name,
                "masking": masking_kind,
                "seq": seq,
                "workers": workers,
                "sequences": count * batch,
                "first_batch_s": round(to_first, 2),
                "end_of_epoch_s": round(to_end, 2),
                "seq_per_s": round((count - 1) * batch / seconds, 1),
            }
            if workers == 2:
                row["speedup_over_1_worker"] = round(seconds_at[name, 1] / seconds, 2)
                row["scaling_goal"] = SCALING_GOAL
                if (masking_kind, seq) in GOALS:
                    row["goal_seq_per_s"] = GOALS[masking_kind, seq]
            emit(row)


def masker_row(what: str, ids: np.ndarray, boundary: np.ndarray, batch: int) -> None:
    """Records masked per second: one `mask_tokens` call per record against `mask_batch` per batch
    of `batch`, the same [seed, epoch, index] generators (and the same masks: checked)."""
    options = masking.albert_options(30000, 20, 0.15, 3, True)
    count = len(ids) - len(ids) % batch
    start = time.perf_counter()
    singles = [
        masking.mask_tokens(ids[i], boundary[i], np.random.default_rng([1, 0, i]), vocab_size=30000)
        for i in range(count)
    ]
    single_seconds = time.perf_counter() - start
    start = time.perf_counter()
    batched = [
        batch_masking.mask_batch(
            ids[first : first + batch],
            boundary[first : first + batch],
            [np.random.default_rng([1, 0, i]) for i in range(first, first + batch)],
            options,
        )
        for first in range(0, count, batch)
    ]
    batch_seconds = time.perf_counter() - start
    assert all(
        np.array_equal(singles[i].masked_ids, batched[i // batch].masked_ids[i % batch])
        for i in range(count)
    )
    emit(
        {
            "row": "masker",
            "data": what,
            "records": count,
            "batch": batch,
            "mask_tokens_records_per_s": round(count / single_seconds, 1),
            "mask_batch_records_per_s": round(count / batch_seconds, 1),
            "speedup": round(single_seconds / batch_seconds, 2),
        }
    )


def records_of(paths, limit: int) -> tuple[np.ndarray, np.ndarray]:
    """input_ids (masked positions restored) and token_boundary of the first `limit` records."""
    ids, boundary = [], []
    for path in paths:
        for record in tfrecord_records(str(path)):
            example = decode_example(record)
            if "masked_lm_weights" in example:
                count = int(example["masked_lm_weights"].sum())
                positions = example["masked_lm_positions"][:count]
                example["input_ids"][positions] = example["masked_lm_ids"][:count]
            ids.append(example["input_ids"])
            boundary.append(example["token_boundary"].astype(bool))
            if len(ids) == limit:
                return np.stack(ids), np.stack(boundary)
    return np.stack(ids), np.stack(boundary)


def bucket_row(data: str, batch: int, buckets: int) -> None:
    """Padding tokens per batch, and Grain's sequences/s, without and with --length-buckets."""
    spec = pretrain_records.inspect_data(data)
    row = {"row": "length_buckets", "data": data, "seq": spec.max_seq_length, "batch": batch}
    for label, value in (("none", 0), (str(buckets), buckets)):
        batches = grain_input.train_batches(spec, batch, epoch=0, seed=1, length_buckets=value)
        seconds, count, _, padding, *_ = epoch(batches)
        row[f"padding_per_batch_{label}"] = round(padding / count, 1)
        row[f"seq_per_s_{label}"] = round((count - 1) * batch / seconds, 1)
    row["padding_saved_per_batch"] = round(
        row["padding_per_batch_none"] - row[f"padding_per_batch_{buckets}"], 1
    )
    emit(row)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--megabytes", type=int, default=10)
    parser.add_argument("--seqs", default="128,512")
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--workdir", default=None)
    parser.add_argument("--real", action="append", default=[], help="real pretraining shards")
    parser.add_argument("--length-buckets", type=int, default=4)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(dir=args.workdir) as work:
        for seq in (int(s) for s in args.seqs.split(",")):
            directory = Path(work) / f"s{seq}"
            directory.mkdir()
            generate(directory, args.megabytes, seq=seq)
            for masking_kind in ("static", "dynamic"):
                input_rows(
                    write_metadata(directory, seq, masking_kind), seq, masking_kind, args.batch
                )
            masker_row(
                f"generated s{seq}",
                *records_of(sorted(directory.glob("*.tfrecord")), 4096),
                args.batch,
            )
    reference = Path(__file__).resolve().parents[3] / "shared/data/reference/ref_seq128.tfrecord"
    if reference.exists():
        masker_row("reference s128 (real text)", *records_of([reference], 4096), args.batch)
    for data in args.real:
        bucket_row(data, args.batch, args.length_buckets)


if __name__ == "__main__":
    main()
