"""The real-token share of pretraining batches on our shards: unpacked, with length buckets, packed.

    python -m benchmarks.packing [--shards NAME=DIR ...] [--seqs 128,512] [--instances 4,8]

The shard sets: the reference script's TFRecords (../shared/data/reference, s128) and our own
stages' shards at each of --seqs (dynamic masking, `benchmarks/gpu/trainer.py prepare`): of
../shared/data's books (`--no-wikipedia`: the GPU kit's shards) and of the books + the Wikipedia
sample, built into a temporary directory unless --shards names directories holding s{seq}/. Over
every training record of epoch 0 in the trainer's order (seed 12345, window 10,000, 8 open
shards), one JSON line per shard set and length:
- `unpacked`: real tokens / the rows' tokens (every record padded to the length);
- `bucketed`: the same with `--length-buckets` as its default would choose on an accelerator
  (`model.input.length_buckets.choose_buckets`, k printed), each record padded to its bin's edge
  (before the partly filled bins an epoch drops);
- `packed_k{K}`: real tokens / (rows x length) of the packed rows (`model.input.packed`, what the
  trainer's --packing on computes, before the last partial batch is dropped), with the instances a
  row, the masked-LM prediction slots used and the packer's cost per record on this CPU.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from benchmarks.helpers.machine import cpu_model
from benchmarks.helpers.shared_data import SHARED
from model.input import epoch_order, length_buckets, packed, packing
from model.input import records as pretrain_records

SEED, WINDOW, CYCLE = 12345, 10_000, 8


def epoch_records(spec):
    """The positioned training records of epoch 0, in the trainer's order."""
    files, modulus = pretrain_records.epoch_files(spec, SEED, 0)
    return epoch_order.training_records(files, modulus, CYCLE, SEED, 0, WINDOW)


def packed_figures(spec, instances: int) -> dict:
    """Real-token share, instances a row, prediction slots used and µs a record of packed rows."""
    shape = packed.spec_shape(spec, instances)
    budgets = packed.Budgets(spec)
    start = time.perf_counter()
    rows = list(packing.packed_rows(map(budgets, epoch_records(spec)), shape))
    seconds = time.perf_counter() - start
    tokens = predictions = 0
    for row in rows:
        for _, tokens_of, predictions_of in map(budgets, row):
            tokens, predictions = tokens + tokens_of, predictions + predictions_of
    records = sum(len(row) for row in rows)
    return {
        "real_token_share": round(tokens / (len(rows) * shape.seq_len), 4),
        "instances_per_row": round(records / len(rows), 2),
        "prediction_slots": shape.width,
        "prediction_slots_used": round(predictions / (len(rows) * shape.width), 3),
        "us_per_record": round(1e6 * seconds / records, 1),
    }


def measure(name: str, data: str, instances: list[int]) -> dict:
    spec = pretrain_records.inspect_data(data)
    budgets = packed.Budgets(spec)
    lengths = np.asarray([tokens for _, tokens, _ in map(budgets, epoch_records(spec))])
    seq = spec.max_seq_length
    buckets = length_buckets.choose_buckets(length_buckets.sample_lengths(spec), seq)
    real = int(lengths.sum())
    line = {
        "shards": name,
        "seq": seq,
        "masking": spec.masking,
        "records": len(lengths),
        "unpacked": round(real / (len(lengths) * seq), 4),
        "bucketed": round(real / length_buckets.computed_tokens(lengths, seq, buckets), 4),
        "buckets": buckets,
    }
    for k in instances:
        line[f"packed_k{k}"] = packed_figures(spec, k)
    return line


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--shards",
        action="append",
        default=[],
        help="NAME=DIR: a directory of s{seq}/ shard sets (default: build books and "
        "books+wikipedia)",
    )
    parser.add_argument("--seqs", default="128,512")
    parser.add_argument("--instances", default="4,8")
    args = parser.parse_args()
    seqs = [int(s) for s in args.seqs.split(",")]
    instances = [int(k) for k in args.instances.split(",")]
    machine = {"cpu": cpu_model(), "load": os.getloadavg()[0]}
    print(json.dumps({"machine": machine}), flush=True)
    print(json.dumps(measure("reference", str(SHARED / "reference"), instances)), flush=True)
    with tempfile.TemporaryDirectory() as scratch:
        sets = dict(item.split("=", 1) for item in args.shards)
        if not sets:
            sys.path.insert(0, str(Path(__file__).resolve().parent / "gpu"))
            from trainer import prepare  # the GPU kit's shards: benchmarks/gpu/trainer.py

            for name, wikipedia in (("books", False), ("books+wikipedia", True)):
                sets[name] = str(Path(scratch) / name)
                prepare(Path(sets[name]), seqs, max_mib=1e9, wikipedia=wikipedia)
        for name, directory in sets.items():
            for seq in seqs:
                line = measure(name, str(Path(directory) / f"s{seq}"), instances)
                print(json.dumps(line), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
