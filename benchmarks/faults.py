"""Fault injection: kill stages at seeded random moments, two writers on one output, failed I/O.

Every fault is followed by the same command again, and a fault counts as survived when:
- while the fault was in effect, no partial output was visible as a finished one (a stage's output
  directory was absent or byte-identical to the uninterrupted run's);
- the re-run succeeded, and its output is byte-identical to the uninterrupted run's (data
  stages), or ends with the same weights digest and the same metrics records (pretraining);
- no temporary folder, lock or process of the killed run is left behind.
`bytes_lost` counts finished work lost: bytes of committed outputs and checkpoints present when the
fault struck that the recovery removed without superseding them (goal: 0).

Scenarios (all on the real stages, shared books as the corpus):
- `kill`: SIGKILL `python -m pipelines.segment | vocab | tfrecords | model.pretrain` at a seeded
  random moment of its run (reading, writing and merging shards, a checkpoint write, the export),
  the segment stage also with two Beam worker processes; then the same command again.
- `two_writers`: two pretraining runs started together on one output directory.
- `io_errors`: an fsspec filesystem (object-store semantics) that fails its Nth call, for every N
  over one checkpoint save + metrics record + export commit; then the same operations again.
- `records`: `--records` Hypothesis mutations of a real cached result record (the segment stage's,
  written by a real flow run) read through the flows' result storage and Prefect's own cache check
  (tests/record_mutations.py): each must be refused in one line or read back as plain JSON data,
  and no payload (pickles that touch a marker file, plain, base64 or compressed) may ever run.

    python -m benchmarks.faults [--seed 0] [--kills 2] [--records 20000] [--work DIR]
                                [--only vocab,tfrecords,records]

Prints one JSON line: faults injected, survived, bytes lost, per scenario details, the CPU model.
The scenarios live in benchmarks/helpers/fault_kills.py (kills, two writers) and
benchmarks/helpers/fault_io.py (I/O errors, stored records)."""

from __future__ import annotations

import argparse
import json
import random
import shutil
import sys
import tempfile
from pathlib import Path

from benchmarks.helpers.fault_io import io_error_scenarios, record_fuzz
from benchmarks.helpers.fault_kills import kill_scenario, records, run, tree, two_writers
from benchmarks.helpers.machine import cpu_model

ROOT = Path(__file__).resolve().parents[1]
BOOKS = ROOT.parent / "shared" / "data" / "books"
CORPUS = [
    "austen-persuasion.txt",
    "chesterton-brown.txt",
    "shakespeare-macbeth.txt",
    "blake-poems.txt",
]


def stage_commands(work: Path, out: Path) -> dict[str, list[str]]:
    py = [sys.executable, "-m"]
    books = [arg for book in CORPUS for arg in ("--input", str(BOOKS / book))]
    return {
        "segment": py
        + [
            "pipelines.segment",
            *books,
            "--output",
            str(out / "segment"),
            "--format",
            "text",
            "--num-shards",
            "4",
        ],
        "segment-2-workers": py
        + [
            "pipelines.segment",
            *books,
            "--output",
            str(out / "segment-2-workers"),
            "--format",
            "text",
            "--num-shards",
            "4",
            "--direct_running_mode=multi_processing",
            "--direct_num_workers=2",
        ],
        "vocab": py
        + [
            "pipelines.vocab",
            "--input",
            str(work / "ref" / "segment"),
            "--output",
            str(out / "vocab"),
            "--vocab-size",
            "2000",
        ],
        "tfrecords": py
        + [
            "pipelines.tfrecords",
            "--input",
            str(work / "ref" / "segment"),
            "--spm-model",
            str(work / "ref" / "vocab" / "spiece.model"),
            "--output",
            str(out / "tfrecords"),
            "--max-seq-length",
            "64",
            "--num-shards",
            "3",
            "--dupe-factor",
            "1",
        ],
        "pretrain": py
        + [
            "model.pretrain",
            "--data",
            str(work / "ref" / "tfrecords"),
            "--output",
            str(out / "pretrain"),
            "--preset",
            "albert-nano",
            "--steps",
            "40",
            "--batch-size",
            "8",
            "--log-every",
            "2",
            "--checkpoint-every",
            "5",
            "--eval-every",
            "0",
            "--eval-batches",
            "2",
            "--warmup-steps",
            "2",
            "--no-progress",
            "--no-jit-compile",
            "--spm-model",
            str(work / "ref" / "vocab" / "spiece.model"),
        ],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--kills", type=int, default=2, help="SIGKILLs per stage")
    parser.add_argument(
        "--work", default=None, help="work directory (default: a temporary one, removed after)"
    )
    parser.add_argument(
        "--only",
        default=None,
        help="comma-separated stages to kill (then no two-writer or I/O faults);"
        " `records`: the record fuzz",
    )
    parser.add_argument(
        "--records", type=int, default=20000, help="mutations of a cached result record to read"
    )
    args = parser.parse_args()
    only = args.only.split(",") if args.only else None
    rng = random.Random(args.seed)
    work = Path(args.work or tempfile.mkdtemp(prefix="albert-faults-"))
    try:
        ref_commands = stage_commands(work, work / "ref")
        references: dict[str, dict] = {}
        needed = {
            "segment": ["segment"],
            "segment-2-workers": ["segment", "segment-2-workers"],
            "vocab": ["segment", "vocab"],
            "tfrecords": ["segment", "vocab", "tfrecords"],
            "records": [],
        }
        wanted = (
            {n for stage in only for n in needed.get(stage, list(ref_commands))}
            if only
            else set(ref_commands)
        )
        for name, command in ref_commands.items():
            if name not in wanted:
                continue
            seconds, summary = run(command)
            output = Path(command[command.index("--output") + 1])
            references[name] = {
                "seconds": seconds,
                "tree": tree(output),
                "weights": summary.get("weights_sha256"),
                "records": records(output / "metrics.jsonl"),
            }
        if "segment-2-workers" in references:  # any worker count: the same bytes
            references["segment-2-workers"]["tree"] = references["segment"]["tree"]
        commands = stage_commands(work, work / "faults")
        scenarios = []
        for name, command in commands.items():
            if only and name not in only:
                continue
            output = Path(command[command.index("--output") + 1])
            for _ in range(args.kills):
                scenarios.append(
                    kill_scenario(
                        name, command, output, references[name], references[name]["seconds"], rng
                    )
                )
        if not only:
            scenarios.append(two_writers(commands, work, references["pretrain"]))
            scenarios.extend(io_error_scenarios(work))
        fuzz = record_fuzz(work, args.records, args.seed) if not only or "records" in only else None
        failed = [s for s in [*scenarios, fuzz] if s and not s["survived"]]
        print(
            json.dumps(
                {
                    "faults_injected": len(scenarios),
                    "survived": sum(1 for s in scenarios if s["survived"]),
                    "bytes_lost": sum(s["bytes_lost"] for s in scenarios),
                    "kills": sum(
                        1 for s in scenarios if s["stage"] not in ("two_writers", "io_error")
                    ),
                    "io_errors": sum(1 for s in scenarios if s["stage"] == "io_error"),
                    "record_mutations": fuzz,
                    "reference_seconds": {k: round(v["seconds"], 1) for k, v in references.items()},
                    "failed": failed,
                    "kill_details": [s for s in scenarios if s["stage"] not in ("io_error",)],
                    "seed": args.seed,
                    "cpu": cpu_model(),
                },
                sort_keys=True,
            )
        )
    finally:
        if not args.work:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
