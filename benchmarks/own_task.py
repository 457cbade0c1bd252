"""A team's own task side by side: `python -m model.finetune --train FILE --dev FILE --text-column
... --label-column ... --kind ...` against Hugging Face's `transformers.Trainer` on
AlbertForSequenceClassification, on the shared BBC News, TREC (fine) and GoEmotions files; and Sun
et al.'s long-text strategies on BBC News (`--study truncation`).

    python -m benchmarks.own_task [--init HF_EXPORT | --checkpoint CKPT --preset albert-tiny]
        [--tasks bbc trec goemotions] [--seeds 1 2 ... 10] [--steps 150] [--batch-size 16]
        [--learning-rate 1e-3] [--warmup-steps 15] [--max-seq-length 128] [--max-train-rows 640]
        [--max-dev-rows 300] [--sides ours hf] [--workdir runs/own-task-bench]
    python -m benchmarks.own_task --study truncation [--strategies head tail head_tail]
        [--head-tokens 32] [--further-pretrain-steps 0 40] [--seeds 1 2 3 4 5] ...

The start: `--init`, a Hugging Face export with our tokenizer.json; or `--checkpoint`, a
`model.pretrain` checkpoint exported once (`export_checkpoint`); or neither: `--pretrain-steps`
AdamW steps of albert-tiny on the reference TFRecords of ../shared/data (sp16k.model), run once and
kept under WORKDIR. Both sides start from that one export.

The data (../shared/data/classification, or $ALBERT_SHARED_DATA): BBC News (`bbc-news/train.csv`,
`dev.csv`: header `category,text`, 5 labels), TREC (`train_5500.label`, dev `TREC_10.label`: the 50
fine labels, `LABEL question` a line, Latin-1, written once as header-less Latin-1 TSV under
WORKDIR, which our CLI reads with `--encoding latin-1`) and GoEmotions (`train.tsv`, `dev.tsv`:
header-less, CSV-quoted, 28 labels, multi-label `--label-separator ,`). Each run takes the first
`--max-train-rows` training rows and the first `--max-dev-rows` dev rows.

Side by side (default `--study parity`): the same steps, learning rate, batch size, warmup,
sequence length, head dropout (our CLI's, `resolved_hyperparameters`), linear decay after warmup
(ours `--schedule after_warmup`, Trainer's `linear`) and AdamW settings (`trainer_arguments`);
Trainer fine-tunes single-label tasks with softmax cross-entropy and multi-label ones with sigmoid
and BCE (`problem_type`). Its rows are read by our reader (`model.tasks.own_task`, no Keras), so
both sides train and score the same examples under the same label indices, and scored by our
metrics (a multi-label task's threshold tuned on the dev rows as ours is, `multi_label_scores`).
Each side runs in a fresh process timed from its start (imports, reading, encoding, training, the
dev evaluation). One JSON line per task: each side's mean and standard deviation (over seeds) of
accuracy and macro-F1 (multi-label: micro-F1), Welch's t-test p value of each, each side's wall
seconds and Hugging Face's over ours (the speed ratio), the CPU and the load average. Each run's
line goes to WORKDIR/runs.jsonl.

`--study truncation`: ours alone on BBC News, through `python -m flows.finetune` (`albert
finetune`, which runs `--further-pretrain-steps`), each `--strategies` truncation at
`--max-seq-length` (shorter than most articles) with each `--further-pretrain-steps` count on the
task's own training text (0: none); one JSON line per (strategy, further pretraining) cell.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from collections.abc import Iterable
from pathlib import Path

import numpy as np

from benchmarks.helpers.classification_data import CLASSIFICATION, DATASETS, as_tsv
from benchmarks.helpers.fresh_process import REPO, finetune_command, in_fresh_process
from benchmarks.helpers.hf_finetune import (
    export_checkpoint,
    resolved_hyperparameters,
    trainer_predictions,
)
from benchmarks.helpers.machine import cpu_model
from benchmarks.helpers.shared_data import SHARED

REFERENCE = SHARED / "reference"
SPM_MODEL = REFERENCE / "sp16k.model"
# The metrics reported for each kind, our CLI's names.
METRICS = {"classification": ("accuracy", "macro_f1"), "multi_label": ("micro_f1",)}


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--study", default="all", choices=["all", *STUDIES])
    parser.add_argument("--init", help="a Hugging Face export with our tokenizer (both sides)")
    parser.add_argument("--checkpoint", help="else a model.pretrain checkpoint dir, exported")
    parser.add_argument("--preset", default="albert-tiny", help="--checkpoint's architecture")
    parser.add_argument("--pretrain-steps", type=int, default=300, help="else pretrain this much")
    parser.add_argument("--workdir", default=str(REPO / "runs" / "own-task-bench"))
    parser.add_argument("--tasks", nargs="+", default=list(DATASETS), choices=list(DATASETS))
    parser.add_argument("--seeds", type=int, nargs="+", help="default: 1-10 (truncation: 1-5)")
    parser.add_argument("--sides", nargs="+", default=["ours", "hf"], choices=["ours", "hf"])
    parser.add_argument("--steps", type=int, default=150, help="training steps (both sides)")
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--learning-rate", type=float, default=1e-3)
    parser.add_argument("--warmup-steps", type=int, default=15)
    parser.add_argument("--max-seq-length", type=int, default=128)
    parser.add_argument("--max-train-rows", type=int, default=640)
    parser.add_argument("--max-dev-rows", type=int, default=300)
    parser.add_argument("--strategies", nargs="+", default=["head", "tail", "head_tail"])
    parser.add_argument("--head-tokens", type=int, default=32, help="head of head_tail")
    parser.add_argument("--further-pretrain-steps", type=int, nargs="+", default=[0, 40])
    return parser.parse_args(argv)


def own_task_flags(values: dict) -> list[str]:
    """`FinetuneConfig` field values as our CLI's flags (`--field-name VALUE`; a list joined by
    commas; a bool `--name`/`--no-name`; None left out)."""
    flags = []
    for name, value in values.items():
        flag = "--" + name.replace("_", "-")
        if isinstance(value, bool):
            flags.append(flag if value else "--no-" + flag[2:])
        elif isinstance(value, list):
            flags += [flag, ",".join(value)]
        elif value is not None:
            flags += [flag, str(value)]
    return flags


def task_values(name: str, args, workdir: Path) -> dict:
    """The `FinetuneConfig` fields of dataset `name` at `args`' settings, but init, output, seed."""
    dataset = DATASETS[name]
    prepared = workdir / "data" / name
    return {
        "task": name,
        "train_file": str(as_tsv(CLASSIFICATION / dataset.train, prepared / "train.tsv",
                                 dataset.encoding)),
        "dev_file": str(as_tsv(CLASSIFICATION / dataset.dev, prepared / "dev.tsv",
                               dataset.encoding)),
        "text_column": [dataset.text_column],
        "label_column": dataset.label_column,
        "header": dataset.header,
        "kind": dataset.kind,
        "label_separator": dataset.label_separator,
        "encoding": dataset.encoding,
        "spm_model": str(SPM_MODEL),
        "train_steps": args.steps,
        "eval_every": args.steps,
        "learning_rate": args.learning_rate,
        "batch_size": args.batch_size,
        "warmup_steps": args.warmup_steps,
        "max_seq_length": args.max_seq_length,
        "max_train_examples": args.max_train_rows,
        "max_dev_examples": args.max_dev_rows,
        "schedule": "after_warmup",
        "quiet": True,
    }  # fmt: skip


def ours(module: str, values: dict, output: Path) -> dict:
    """Our CLI (`python -m module` with `values` as flags) writing `output`: its dev metrics,
    wall seconds and the rows it used (of those it read, the first `max_*_examples`)."""
    command = [sys.executable, "-m", module, *own_task_flags({**values, "output": str(output)})]
    run = finetune_command(command, output)
    counts = run["results"]["counts"]
    rows = {
        split: min(counts[split]["read"], values[f"max_{split}_examples"] or counts[split]["read"])
        for split in ("train", "dev")
    }
    return {"dev": run["results"]["dev"], "wall_seconds": run["wall_seconds"], "rows": rows}


def huggingface(values: dict, seed: int, hp: dict, output_dir: str) -> dict:
    """Hugging Face's side (`trainer_predictions`) on the rows our reader gives for `values`,
    scored by our metrics."""
    from model.finetune.config import FinetuneConfig, task_of  # no Keras: the config only
    from model.tasks.own_task import multi_label_scores
    from model.tasks.splits import SplitSettings, read_examples

    config = FinetuneConfig(**values, output=output_dir, seed=seed)
    task = task_of(config)

    def examples(path: str, split: str, limit: int) -> list:
        settings = SplitSettings(
            task.name, path, split, config.spm_model, hp["max_seq_length"], limit,
            task_source=task.source,
        )  # fmt: skip
        return read_examples(settings)

    train = examples(config.train_file, "train", config.max_train_examples)
    dev = examples(config.dev_file, "dev", config.max_dev_examples)
    multi_label = task.kind == "multi_label"

    def labels(rows: list) -> list:
        if not multi_label:
            return [row.label for row in rows]
        return [[float(i in row.label) for i in range(task.num_labels)] for row in rows]

    def texts(rows: list) -> list[tuple]:
        return [(row.text_a,) if row.text_b is None else (row.text_a, row.text_b) for row in rows]

    problem = "multi_label_classification" if multi_label else "single_label_classification"
    logits = trainer_predictions(
        config.init, (texts(train), labels(train)), texts(dev), problem, task.num_labels, hp,
        config.train_steps, seed, "after_warmup", output_dir,
    )  # fmt: skip
    gold = np.asarray(labels(dev))
    if multi_label:
        return {"dev": multi_label_scores(1 / (1 + np.exp(-logits.astype(np.float64))), gold)[0]}
    return {"dev": task.metrics(logits.argmax(-1), gold)}


def spread(values: list[float]) -> dict:
    """Mean and (sample) standard deviation of `values`, rounded."""
    std = float(np.std(values, ddof=1)) if len(values) > 1 else 0.0
    return {"mean": round(float(np.mean(values)), 4), "std": round(std, 4)}


def welch_p(a: list[float], b: list[float]) -> float | None:
    """Welch's t-test p value of `a` against `b` (None where it is undefined: no spread)."""
    from scipy.stats import ttest_ind  # heavy: SciPy, only for the summaries

    if np.ptp(a) == 0 and np.ptp(b) == 0:
        return None
    p = float(ttest_ind(a, b, equal_var=False).pvalue)
    return None if np.isnan(p) else round(p, 4)


def side_by_side(runs: list[dict], metrics: Iterable[str]) -> dict:
    """Each side's spread of each metric and of its wall seconds, the Welch p value of each metric
    and Hugging Face's wall seconds over ours, from `runs` (a side's runs: {"ours"|"hf": ...})."""
    sides = [side for side in ("ours", "hf") if side in runs[0]]
    line = {
        side: {m: spread([run[side]["dev"][m] for run in runs]) for m in metrics} for side in sides
    }
    walls = {side: [run[side]["wall_seconds"] for run in runs] for side in sides}
    line["wall_seconds"] = {side: spread(values) for side, values in walls.items()}
    if len(sides) == 2:
        line["welch_p"] = {
            m: welch_p([r["ours"]["dev"][m] for r in runs], [r["hf"]["dev"][m] for r in runs])
            for m in metrics
        }
        line["speed_ratio"] = round(float(np.mean(walls["hf"]) / np.mean(walls["ours"])), 2)
    return line


def start(args, workdir: Path) -> Path:
    """The Hugging Face export both sides start from (see the module docstring)."""
    if args.init:
        return Path(args.init)
    if args.checkpoint:
        target = workdir / "export-hf"
        return export_checkpoint(Path(args.checkpoint), args.preset, target, str(SPM_MODEL))
    run = workdir / f"pretrain-{args.pretrain_steps}"
    command = [
        sys.executable, "-m", "model.pretrain", "--data", str(REFERENCE / "ref_seq128.tfrecord"),
        "--output", str(run), "--preset", "albert-tiny", "--spm-model", str(SPM_MODEL),
        "--steps", str(args.pretrain_steps), "--batch-size", "32", "--learning-rate", "1e-3",
        "--warmup-steps", str(args.pretrain_steps // 10), "--optimizer", "adamw",
        "--eval-every", "0", "--seed", "1", "--no-progress",
    ]  # fmt: skip
    if not (run / "export" / "hf").exists():
        env = {**os.environ, "PYTHONPATH": str(REPO)}
        subprocess.run(command, cwd=REPO, env=env, check=True, stdout=subprocess.DEVNULL)
    return run / "export" / "hf"


def machine() -> dict:
    return {"cpu": cpu_model(), "load": [round(x, 2) for x in os.getloadavg()]}


def parity(args, init: Path, workdir: Path, log) -> None:
    seeds = args.seeds or list(range(1, 11))
    for name in args.tasks:
        values = {**task_values(name, args, workdir), "init": str(init)}
        hp = resolved_hyperparameters(_config(values))
        metrics = METRICS[DATASETS[name].kind]
        runs = []
        for seed in seeds:
            run = {"task": name, "seed": seed}
            if "ours" in args.sides:
                output = workdir / f"ours-{name}-{seed}"
                run["ours"] = ours("model.finetune", {**values, "seed": seed}, output)
            if "hf" in args.sides:
                output_dir = str(workdir / f"hf-{name}-{seed}")
                run["hf"] = in_fresh_process(huggingface, values, seed, hp, output_dir)
            runs.append({**run, **machine()})
            log.write(json.dumps(runs[-1]) + "\n")
            log.flush()
        line = {
            "task": name, "kind": DATASETS[name].kind, "seeds": seeds,
            "rows": runs[0].get("ours", {}).get("rows"), **hp, "steps": args.steps,
            **side_by_side(runs, metrics), **machine(),
        }  # fmt: skip
        print(json.dumps(line), flush=True)


def truncation(args, init: Path, workdir: Path, log) -> None:
    values = {**task_values("bbc", args, workdir), "init": str(init)}
    values["head_tokens"] = args.head_tokens
    seeds = args.seeds or list(range(1, 6))
    for steps in args.further_pretrain_steps:
        for strategy in args.strategies:
            cell = {"truncation": strategy, "further_pretrain_steps": steps}
            runs = []
            for seed in seeds:
                output = workdir / f"truncation-{strategy}-{steps}-{seed}"
                run = {**values, **cell, "seed": seed}
                runs.append({"ours": ours("flows.finetune", run, output)})
                log.write(json.dumps({**cell, "seed": seed, **runs[-1], **machine()}) + "\n")
                log.flush()
            scores = side_by_side(runs, METRICS["classification"])
            line = {
                "study": "truncation", "task": "bbc", **cell, "head_tokens": args.head_tokens,
                "max_seq_length": args.max_seq_length, "seeds": seeds,
                "rows": runs[0]["ours"]["rows"], "steps": args.steps, **scores["ours"],
                "wall_seconds": scores["wall_seconds"]["ours"], **machine(),
            }  # fmt: skip
            print(json.dumps(line), flush=True)


STUDIES = {"parity": parity, "truncation": truncation}


def _config(values: dict):
    from model.finetune.config import FinetuneConfig  # no Keras: the config only

    return FinetuneConfig(**values, output="-")


def main(argv=None) -> None:
    args = parse_args(argv)
    # Both sides, set before torch loads libgomp (see finetune_parity.py): spinning OpenMP threads
    # slow torch 5-10x on a CPU shared with other jobs.
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    workdir = Path(args.workdir).resolve()
    workdir.mkdir(parents=True, exist_ok=True)
    init = start(args, workdir)
    with (workdir / "runs.jsonl").open("a") as log:
        for study in STUDIES if args.study == "all" else [args.study]:
            STUDIES[study](args, init, workdir, log)


if __name__ == "__main__":
    main()
