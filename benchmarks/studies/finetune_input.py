"""Fine-tuning input: encoding a training split with 0, 1 and 2 input workers (`--input-workers`;
`model.tasks.parallel_encoding`), on SST-2's first `--sst2-examples` training examples at s128 and
on the SQuAD v1.1 dev file's questions (10,570) as a training split at s384 (stride 128), with the
reference's 16k vocabulary. One JSON line per row with the CPU model and load: examples/s (worker
start included) and the speedup over 0 workers; every row's arrays and counts are checked equal to
the 0-worker row's.

    python -m benchmarks.studies.finetune_input [--sst2-examples 20000] [--workers 0,1,2]
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

import numpy as np

from albert.tokenization import AlbertTokenizer
from benchmarks.helpers.machine import cpu_model
from model.tasks.parallel_encoding import encode_split
from model.tasks.splits import SplitSettings, encoded_examples, read_examples

SHARED = Path(__file__).resolve().parents[3] / "shared" / "data"
SPM_MODEL = SHARED / "reference" / "sp16k.model"


def emit(row: dict) -> None:
    print(
        json.dumps({"cpu": cpu_model(), "cpus": os.cpu_count(), "load": os.getloadavg()[0], **row}),
        flush=True,
    )


def splits(sst2_examples: int) -> dict[str, SplitSettings]:
    common = {"spm_model": str(SPM_MODEL), "split": "train"}
    return {
        "sst2": SplitSettings(
            task="sst2",
            path=str(SHARED / "glue" / "SST-2" / "train.tsv"),
            max_seq_length=128,
            limit=sst2_examples,
            **common,
        ),
        "squad1": SplitSettings(
            task="squad1",
            path=str(SHARED / "squad" / "dev-v1.1.json"),
            max_seq_length=384,
            **common,
        ),
    }


def rows(name: str, settings: SplitSettings, worker_counts: list[int]) -> None:
    tokenizer = AlbertTokenizer(settings.spm_model)
    examples = encoded_examples(settings, read_examples(settings))
    reference, base = None, None
    for workers in worker_counts:
        start = time.perf_counter()
        arrays, counts = encode_split(settings, tokenizer, examples, workers)
        seconds = time.perf_counter() - start
        reference = reference or (arrays, counts)
        equal = counts == reference[1] and all(
            np.array_equal(arrays[k], reference[0][k]) for k in reference[0]
        )
        base = base or seconds
        emit(
            {
                "task": name,
                "max_seq_length": settings.max_seq_length,
                "workers": workers,
                "examples": len(examples),
                "rows": len(arrays["input_ids"]),
                "seconds": round(seconds, 2),
                "examples_per_s": round(len(examples) / seconds),
                "speedup": round(base / seconds, 2),
                "equal": equal,
            }
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sst2-examples", type=int, default=20_000)
    parser.add_argument("--workers", default="0,1,2")
    args = parser.parse_args()
    worker_counts = [int(n) for n in args.workers.split(",")]
    for name, settings in splits(args.sst2_examples).items():
        rows(name, settings, worker_counts)


if __name__ == "__main__":
    main()
