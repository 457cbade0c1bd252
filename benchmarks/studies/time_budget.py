"""A time budget against step schedules (issue 29): three pretraining runs given the same
wall-clock budget, on the same data, preset, batch, seed and warmup.

    python -m benchmarks.studies.time_budget --data DIR [--budget 10m] [--preset albert-tiny]
        [--batch-size 32] [--learning-rate LR] [--warmup-steps 250] [--eval-batches 50]
        [--workdir DIR]

1. `budget`: `python -m model.pretrain --time-budget B`, the learning rate decaying to zero at
   the budget; it reaches N steps.
2. `half_steps`: `--steps N/2`, a step schedule sized at half the steps the budget allowed; it
   ends before the budget.
3. `double_steps`: `--steps 2N`, a step schedule sized at double them. The budget runs out at
   step N (the budget allowed N steps at this preset and batch): its held-out evaluation is taken
   there (`--eval-every N`) and the run is stopped, as a run whose hours are spent would be.

Each run is a fresh `python -m model.pretrain` process, one after the other. `DIR` is any
pretraining data with held-out shards, e.g. `make run`'s `runs/enwiki-sample/tfrecords`. Prints
ONE JSON line: each run's steps, wall seconds and held-out masked-LM accuracy and loss and SOP
accuracy, with the CPU model and load.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.helpers.machine import cpu_model
from model.pretrain.time_budget import parse_duration

REPO = Path(__file__).resolve().parents[2]


def heldout_at(metrics: Path, step: int | None = None) -> dict | None:
    """The held-out record of `metrics.jsonl` at `step` (the last one when None), or None."""
    if not metrics.exists():
        return None
    records = [json.loads(line) for line in metrics.read_text().splitlines() if line.strip()]
    heldout = [r for r in records if r.get("split") == "heldout"]
    if step is not None:
        heldout = [r for r in heldout if r["step"] == step]
    return heldout[-1] if heldout else None


def pretrain(common: list[str], output: Path, extra: list[str], stop_at: int | None = None):
    """Run `python -m model.pretrain`; with `stop_at`, stop it once its held-out record at that
    step is written. Returns (held-out record, wall seconds)."""
    command = [sys.executable, "-m", "model.pretrain", *common, "--output", str(output), *extra]
    print(" ".join(command), file=sys.stderr, flush=True)
    start = time.perf_counter()
    process = subprocess.Popen(command, cwd=REPO, stdout=subprocess.DEVNULL)
    while process.poll() is None:
        if stop_at is not None and heldout_at(output / "metrics.jsonl", stop_at):
            process.terminate()
            process.wait()
            break
        time.sleep(1)
    seconds = time.perf_counter() - start
    if stop_at is None and process.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed with exit code {process.returncode}")
    record = heldout_at(output / "metrics.jsonl", stop_at)
    return record, seconds


def row(record: dict, seconds: float) -> dict:
    return {
        "steps": record["step"],
        "wall_s": round(seconds, 1),
        "heldout_mlm_accuracy": round(record["masked_lm_accuracy"], 4),
        "heldout_mlm_loss": round(record["masked_lm_loss"], 4),
        "heldout_sop_accuracy": round(record["sop_accuracy"], 4),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--data", required=True)
    parser.add_argument("--budget", default="10m")
    parser.add_argument("--preset", default="albert-tiny")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--learning-rate", type=float, default=None, help="default: the trainer's")
    parser.add_argument("--warmup-steps", type=int, default=250)
    parser.add_argument("--eval-batches", type=int, default=50)
    parser.add_argument("--seed", type=int, default=12345)
    parser.add_argument("--workdir", default=None)
    args = parser.parse_args()
    parse_duration(args.budget)
    common = [
        *("--data", args.data, "--preset", args.preset),
        *("--batch-size", str(args.batch_size), "--warmup-steps", str(args.warmup_steps)),
        *("--eval-batches", str(args.eval_batches), "--seed", str(args.seed)),
        *("--checkpoint-every", "100000", "--log-every", "100"),
    ]
    if args.learning_rate is not None:
        common += ["--learning-rate", str(args.learning_rate)]
    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(dir=args.workdir) as work:
        work = Path(work)
        budget = row(
            *pretrain(common, work / "budget", ["--time-budget", args.budget, "--eval-every", "0"])
        )
        allowed = budget["steps"]
        half = row(
            *pretrain(
                common, work / "half", ["--steps", str(max(1, allowed // 2)), "--eval-every", "0"]
            )
        )
        double = pretrain(
            common,
            work / "double",
            ["--steps", str(2 * allowed), "--eval-every", str(allowed)],
            stop_at=allowed,
        )
    runs = {"budget": budget, "half_steps": half, "double_steps": row(*double)}
    best_step_run = max(
        runs["half_steps"], runs["double_steps"], key=lambda r: r["heldout_mlm_accuracy"]
    )
    print(
        json.dumps(
            {
                "cpu": cpu_model(),
                "cpus": os.cpu_count(),
                "load_before": load_before,
                "load_after": os.getloadavg()[0],
                "budget": args.budget,
                "preset": args.preset,
                "batch_size": args.batch_size,
                "learning_rate": args.learning_rate,
                "steps_the_budget_allowed": allowed,
                **runs,
                "budget_minus_best_step_run_mlm_accuracy": round(
                    budget["heldout_mlm_accuracy"] - best_step_run["heldout_mlm_accuracy"], 4
                ),
            }
        )
    )


if __name__ == "__main__":
    main()
