"""Fine-tuning side by side: `python -m model.finetune` against Hugging Face's `Trainer` on
AlbertForSequenceClassification loaded from the same export, GLUE SST-2, MRPC, CoLA and STS-B.

    python -m benchmarks.finetune_parity --checkpoint RUN/checkpoints/ckpt-N --preset albert-tiny \
        [--steps 100] [--seeds 1 2] [--tasks sst2 mrpc cola stsb] [--max-dev-examples 500] \
        [--learning-rate 5e-4 --warmup-steps 30]   # instead of Table 14's, both sides
        [--schedule as_each|reference|after_warmup] [--sides ours hf]

The checkpoint (of `model.pretrain`, e.g. benchmarks/learning_parity.py's) is exported once with
`export_huggingface` and our tokenizer.json; both sides start from that export. Both use each task's
Table 14 learning rate, batch size, warmup (cut to the steps) and head dropout as our CLI resolves
them (`model.finetune.hyperparameters`), `--max-seq-length` (CPU: 128), AdamW (ε 1e-6, weight
decay 0.01 off LayerNorm and biases), clipping 1.0, float32, one dev evaluation at the end.
Hugging Face's side is `transformers.Trainer` itself (its default torch AdamW), which needs
`accelerate`: `pip install -e .[test]` (`make test` installs it). The schedule: `as_each` (default)
leaves each side its own, ours `reference` (decay over all the steps) and Trainer's `linear` (decay
after warmup, our `after_warmup`); `reference` or `after_warmup` gives both sides that one (ours by
`--schedule`, Trainer `reference` as a `LambdaLR`).

Prints one JSON line per (task, seed) with each side's dev metric under its official name, wall
time (each side in a fresh process, timed from its start: imports, encoding, training, the dev
evaluation) and the 1-minute load average after both, and a last line with the means.
`benchmarks/finetune_steps.py` compares the two sides step for step. """

from __future__ import annotations

import argparse
import csv
import json
import os
import sys
from pathlib import Path

import numpy as np

from benchmarks.helpers.fresh_process import finetune_command, in_fresh_process
from benchmarks.helpers.hf_finetune import (
    export_checkpoint,
    resolved_hyperparameters,
    trainer_predictions,
)
from benchmarks.helpers.machine import cpu_model
from benchmarks.helpers.shared_data import SHARED

GLUE = SHARED / "glue"
SPM_MODEL = SHARED / "reference" / "sp16k.model"
# task: (directory, official metric, its key in our results, text columns, label column, header)
TASKS = {
    "sst2": ("SST-2", "accuracy", "accuracy", (0,), 1, True),
    "mrpc": ("MRPC", "f1", "f1", (3, 4), 0, True),
    "cola": ("CoLA", "matthews_corrcoef", "mcc", (3,), 1, False),
    "stsb": ("STS-B", "pearson", "pearson", (7, 8), 9, True),
}


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checkpoint", required=True, help="a model.pretrain checkpoint dir")
    parser.add_argument("--preset", default="albert-tiny")
    parser.add_argument("--workdir", default="/tmp/albert-finetune-parity")
    parser.add_argument("--steps", type=int, default=100, help="training steps (both sides)")
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--tasks", nargs="+", default=list(TASKS))
    parser.add_argument("--max-dev-examples", type=int, default=None)
    parser.add_argument(
        "--max-seq-length", type=int, default=128, help="both sides (Table 14's: 0 = as the task)"
    )
    parser.add_argument(
        "--schedule", default="as_each", choices=["as_each", "reference", "after_warmup"]
    )
    parser.add_argument("--sides", nargs="+", default=["ours", "hf"], choices=["ours", "hf"])
    for flag in ("--learning-rate", "--warmup-steps"):
        parser.add_argument(
            flag, type=float if flag == "--learning-rate" else int, default=None,
            help="instead of Table 14's, both sides (our CLI's flag)",
        )  # fmt: skip
    return parser.parse_args(argv)


def ours(task: str, init: Path, seed: int, args, workdir: Path) -> dict:
    output = workdir / f"ours-{task}-{seed}"
    command = [
        sys.executable, "-m", "model.finetune", "--task", task, "--init", str(init),
        "--spm-model", str(SPM_MODEL), "--data-dir", str(GLUE / TASKS[task][0]),
        "--output", str(output), "--train-steps", str(args.steps),
        "--eval-every", str(args.steps), "--seed", str(seed),
    ]  # fmt: skip
    if args.max_dev_examples:
        command += ["--max-dev-examples", str(args.max_dev_examples)]
    if args.max_seq_length:
        command += ["--max-seq-length", str(args.max_seq_length)]
    if args.learning_rate is not None:
        command += ["--learning-rate", str(args.learning_rate)]
    if args.warmup_steps is not None:
        command += ["--warmup-steps", str(args.warmup_steps)]
    if args.schedule != "as_each":
        command += ["--schedule", args.schedule]
    return finetune_command(command, output)


def rows(path: Path, task: str, limit: int | None = None) -> tuple[list[tuple], list[float]]:
    _, _, _, columns, label, header = TASKS[task]
    with path.open(encoding="utf-8-sig", newline="") as handle:
        lines = list(csv.reader(handle, delimiter="\t", quoting=csv.QUOTE_NONE))
    lines = [line for line in lines[1 if header else 0 :] if len(line) > max(*columns, label)]
    lines = lines[:limit] if limit else lines
    return [tuple(line[c] for c in columns) for line in lines], [
        float(line[label]) for line in lines
    ]


def hyperparameters(task: str, args) -> dict:
    """The learning rate, batch size, warmup, sequence length and head dropout our CLI resolves
    (`model.finetune.hyperparameters`: Table 14 with the flags given)."""
    from model.finetune import FinetuneConfig  # no Keras: the config only

    config = FinetuneConfig(
        task=task, init="-", spm_model="-", data_dir="-", output="-", train_steps=args.steps,
        learning_rate=args.learning_rate, warmup_steps=args.warmup_steps,
        max_seq_length=args.max_seq_length or None,
    )  # fmt: skip
    return resolved_hyperparameters(config)


def huggingface(task: str, init: Path, seed: int, hp: dict, args, workdir: Path) -> dict:
    """`transformers.Trainer` fine-tuning AlbertForSequenceClassification loaded from the export
    (`trainer_predictions`) on every train row, scored on the dev rows."""
    regression = task == "stsb"
    _, labels = dev = rows(GLUE / TASKS[task][0] / "dev.tsv", task, args.max_dev_examples)
    logits = trainer_predictions(
        str(init), rows(GLUE / TASKS[task][0] / "train.tsv", task), dev[0],
        "regression" if regression else "single_label_classification", 1 if regression else 2,
        hp, args.steps, seed, args.schedule, str(workdir / f"hf-{task}-{seed}"),
    )  # fmt: skip
    predicted = logits[:, 0] if regression else logits.argmax(-1)
    return {"metric": metric(task, predicted, np.asarray(labels))}


def metric(task: str, predicted: np.ndarray, labels: np.ndarray) -> float:
    from scipy.stats import pearsonr  # heavy: SciPy, scikit-learn

    # heavy: SciPy, scikit-learn
    from sklearn.metrics import accuracy_score, f1_score, matthews_corrcoef

    if task == "stsb":
        return float(pearsonr(predicted, labels)[0])
    if task == "cola":
        return float(matthews_corrcoef(labels, predicted))
    if task == "mrpc":
        return float(f1_score(labels, predicted))
    return float(accuracy_score(labels, predicted))


def main(argv=None) -> None:
    args = parse_args(argv)
    # Both sides, set before torch loads libgomp: on a CPU shared with other jobs, OpenMP threads
    # that spin while waiting made torch's steps 5-10x slower (albert-tiny, batch 32: 6 s a step
    # against 0.8 s passive); TensorFlow's own thread pool is not affected.
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    workdir = Path(args.workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    init = export_checkpoint(
        Path(args.checkpoint), args.preset, workdir / "export-hf", str(SPM_MODEL)
    )
    header = {"cpu": cpu_model(), "load": os.getloadavg()[0], "args": vars(args)}
    print(json.dumps({**header, "omp_wait_policy": os.environ["OMP_WAIT_POLICY"]}))
    lines = []
    for task in args.tasks:
        name, key = TASKS[task][1], TASKS[task][2]
        hp = hyperparameters(task, args) if "hf" in args.sides else None
        for seed in args.seeds:
            line = {
                "task": task, "seed": seed, "metric": name, "steps": args.steps,
                "schedule": args.schedule,
            }  # fmt: skip
            if "ours" in args.sides:
                mine = ours(task, init, seed, args, workdir)
                line["ours"] = round(float(mine["results"]["dev"][key]), 4)
                line["ours_wall_seconds"] = round(mine["wall_seconds"], 1)
            if "hf" in args.sides:
                theirs = in_fresh_process(huggingface, task, init, seed, hp, args, workdir)
                line["hf"] = round(theirs["metric"], 4)
                line["hf_wall_seconds"] = round(theirs["wall_seconds"], 1)
            lines.append({**line, "load": round(os.getloadavg()[0], 2)})
            print(json.dumps(lines[-1]), flush=True)
    means = {
        task: {
            side: round(float(np.mean([line[side] for line in lines if line["task"] == task])), 4)
            for side in ("ours", "hf", "ours_wall_seconds", "hf_wall_seconds")
            if side in lines[-1]
        }
        for task in args.tasks
    }
    print(json.dumps({"means": means}))


if __name__ == "__main__":
    main()
