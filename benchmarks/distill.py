"""`albert distill` measured: a larger teacher, a student over 4x smaller (parameters), on SST-2
and MRPC, over seeds; the distilled student against the same student fine-tuned on labels alone.

    python -m benchmarks.distill [--tasks sst2 mrpc] [--seeds 10] [--train-examples 4000] \
        [--teacher-steps 800] [--student-steps 400] [--max-seq-length 64] [--workdir DIR]

What it does, on a CPU budget (no pretrained ALBERT is at hand here, so both models start from
random weights and learn only from the task's training set):
- the vocabulary is the reference 16k SentencePiece model (../shared/data/reference/sp16k.model);
- the teacher (`TEACHER`: E 128, H 256, 4 shared layers, 4 heads) is fine-tuned once per task
  with `albert finetune` (seed 0) on the first `--teacher-examples` training rows (default:
  `--train-examples`; SST-2 has 67k: subsampled; MRPC's 3,668 are all used), scored on the whole
  dev set; the students get the first `--train-examples` rows;
- per seed, the student (`STUDENT`: E 32, H 64, 2 layers, 2 heads; its initial weights drawn
  with the seed) is trained twice with the same steps, schedule and seed: `albert distill` from the
  teacher (alpha `--alpha`, T `--temperature`, TinyBERT's intermediate losses at
  `--hidden-weight` and `--attention-weight`, 0: off) and `albert finetune` on the labels alone;
- Welch's t-test over the seeds of the two students' dev scores (the task's primary metric), the
  share of the teacher's dev score the distilled student keeps, and the teacher's and the
  student's CPU inference sequences per second at batch 1 and 32 (`albert distill`'s report,
  measured in the same process, side by side).

`--serve TEACHER STUDENT` measures only two fine-tuned models' sequences/s, in alternating rounds
(`--serving-rounds`) so that a changing load weighs on both alike.

Prints one JSON line per run and one per task with the goals: distilled > labels alone
(Welch p < 0.05, one-sided), >= 95% of the teacher's score, >= 3x the teacher's sequences/s.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import time
from pathlib import Path

import numpy as np

from benchmarks.helpers.machine import cpu_model

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared" / "data"
SPM_MODEL = SHARED / "reference" / "sp16k.model"
TASK_DIRS = {"sst2": "SST-2", "mrpc": "MRPC"}
TEACHER = {
    "embedding_size": 128,
    "hidden_size": 256,
    "num_hidden_layers": 4,
    "num_attention_heads": 4,
    "intermediate_size": 1024,
}
STUDENT = {
    "embedding_size": 32,
    "hidden_size": 64,
    "num_hidden_layers": 2,
    "num_attention_heads": 2,
    "intermediate_size": 256,
}


def export(path: Path, architecture: dict, seed: int) -> str:
    """An untrained ALBERT of `architecture` (albert-nano's other fields), seed `seed`, saved as
    a .keras export `albert finetune` and `albert distill` start from."""
    from albert.tokenization import AlbertTokenizer  # heavy: after the backend is chosen
    from model.pretrain import PretrainConfig, build_model  # heavy: Keras

    config = PretrainConfig(
        data="-", output="-", preset="albert-nano", seed=seed, architecture=architecture
    )
    import keras

    keras.utils.set_random_seed(seed)
    build_model(config, AlbertTokenizer(str(SPM_MODEL)).vocab_size).save(path)
    return str(path)


def common(args, task: str, steps: int) -> dict:
    """The settings every run of `task` shares."""
    return {
        "task": task,
        "spm_model": str(SPM_MODEL),
        "data_dir": str(SHARED / "glue" / TASK_DIRS[task]),
        "max_seq_length": args.max_seq_length,
        "max_train_examples": args.train_examples,
        "batch_size": 32,
        "learning_rate": args.learning_rate,
        "train_steps": steps,
        "warmup_steps": steps // 10,
        "eval_every": max(1, steps // 4),
        "patience": 3,
        "checkpoint_every": 10**6,
        "features": args.features,
        "quiet": True,
    }


def score(results: dict) -> float:
    return float(results["dev"][results.get("primary_metric") or "accuracy"])


def distilled_name(args) -> str:
    """The distilled students' output name: `distilled`, with the intermediate weights where
    they are on (so that a --workdir keeps the runs of each setting, and the teacher and the
    labels-alone students are found again)."""
    if not (args.hidden_weight or args.attention_weight):
        return "distilled"
    return f"distilled-h{args.hidden_weight:g}-a{args.attention_weight:g}"


def run_task(args, task: str, work: Path) -> dict:
    from model import distill, finetune  # heavy: Keras

    work.mkdir(parents=True, exist_ok=True)
    start = time.monotonic()
    teacher_dir = work / "teacher"
    teacher_rows = {"max_train_examples": args.teacher_examples or args.train_examples}
    teacher_config = finetune.FinetuneConfig(
        **{**common(args, task, args.teacher_steps), **teacher_rows},
        init=export(work / "teacher-init.keras", TEACHER, 0),
        output=str(teacher_dir),
        seed=0,
    )
    teacher = finetune.run(teacher_config)
    metric = json.loads((teacher_dir / "results.json").read_text())["primary_metric"]
    teacher_score = float(teacher["dev"][metric])
    print(
        json.dumps(
            {
                "task": task,
                "run": "teacher",
                metric: teacher_score,
                "seconds": round(time.monotonic() - start, 1),
            }
        ),
        flush=True,
    )
    distilled, labels_only, serving = [], [], None
    for seed in range(args.seeds):
        init = export(work / f"student-{seed}.keras", STUDENT, seed)
        shared = {**common(args, task, args.student_steps), "seed": seed}
        begun = time.monotonic()
        summary = distill.run(
            distill.DistillConfig(
                **shared,
                teacher=str(teacher_dir),
                student=init,
                alpha=args.alpha,
                temperature=args.temperature,
                hidden_weight=args.hidden_weight,
                attention_weight=args.attention_weight,
                teacher_cache=str(work / "teacher-outputs"),
                serving_iterations=args.serving_iterations if seed == 0 else 0,
                output=str(work / f"{distilled_name(args)}-{seed}"),
            )
        )
        middle = time.monotonic()
        plain = finetune.run(
            finetune.FinetuneConfig(**shared, init=init, output=str(work / f"labels-{seed}"))
        )
        distilled.append(float(summary["dev"][metric]))
        labels_only.append(float(plain["dev"][metric]))
        if seed == 0:
            report = json.loads((work / f"{distilled_name(args)}-0" / "results.json").read_text())
            serving = report["distillation"]
        print(
            json.dumps(
                {
                    "task": task,
                    "seed": seed,
                    f"distilled_{metric}": distilled[-1],
                    f"labels_only_{metric}": labels_only[-1],
                    "distill_seconds": round(middle - begun, 1),
                    "finetune_seconds": round(time.monotonic() - middle, 1),
                }
            ),
            flush=True,
        )
    return summarize(task, metric, teacher_score, distilled, labels_only, serving)


def summarize(task, metric, teacher_score, distilled, labels_only, serving) -> dict:
    """The task's figures and goals (see the module docstring)."""
    from scipy import stats

    test = stats.ttest_ind(distilled, labels_only, equal_var=False)
    difference = statistics.mean(distilled) - statistics.mean(labels_only)
    one_sided = test.pvalue / 2 if difference > 0 else 1 - test.pvalue / 2
    t, s = serving["teacher"], serving["student"]
    speed = {
        size: s["sequences_per_second"][size] / t["sequences_per_second"][size]
        for size in t["sequences_per_second"]
    }
    keeps = statistics.mean(distilled) / teacher_score
    return {
        "task": task,
        "metric": metric,
        "teacher": teacher_score,
        "distilled_mean": statistics.mean(distilled),
        "distilled_std": statistics.stdev(distilled),
        "labels_only_mean": statistics.mean(labels_only),
        "labels_only_std": statistics.stdev(labels_only),
        "seeds": len(distilled),
        "welch_t": float(test.statistic),
        "welch_p_two_sided": float(test.pvalue),
        "welch_p_one_sided": float(one_sided),
        "keeps_of_teacher": keeps,
        "parameters": {
            "teacher": t["parameters"],
            "student": s["parameters"],
            "ratio": t["parameters"] / s["parameters"],
        },
        "flops_per_token": {"teacher": t["flops_per_token"], "student": s["flops_per_token"]},
        "sequences_per_second": {
            "teacher": t["sequences_per_second"],
            "student": s["sequences_per_second"],
            "speedup": speed,
        },
        "goals": {
            "beats_labels_only_p_0.05": bool(difference > 0 and one_sided < 0.05),
            "keeps_95_percent": bool(keeps >= 0.95),
            "serves_3x": bool(min(speed.values()) >= 3.0),
            "student_4x_smaller": bool(t["parameters"] >= 4 * s["parameters"]),
        },
    }


def serving_side_by_side(teacher: str, student: str, args) -> dict:
    """The two fine-tuned models' CPU sequences/s at batch 1 and 32 (`model.distill.serving`),
    measured in alternating rounds of `--serving-iterations` calls (`--serving-rounds`), so that
    a load that changes during the run weighs on both alike; the median round of each."""
    import keras

    from model.distill.serving import sequences_per_second
    from model.finetune import models as registered  # the fine-tuned models' classes

    assert registered.FinetuneModel

    models = {
        name: keras.saving.load_model(path, compile=False)
        for name, path in (("teacher", teacher), ("student", student))
    }
    shape = (32, args.max_seq_length)
    inputs = {
        "input_ids": np.ones(shape, "int32"),
        "segment_ids": np.zeros(shape, "int32"),
        "input_mask": np.ones(shape, "int32"),
    }
    rates = {name: {"1": [], "32": []} for name in models}
    for _ in range(args.serving_rounds):
        for name, model in models.items():
            for size in (1, 32):
                rate = sequences_per_second(model, inputs, size, args.serving_iterations)
                rates[name][str(size)].append(rate)
    median = {
        name: {size: statistics.median(v) for size, v in sizes.items()}
        for name, sizes in rates.items()
    }
    speedup = {size: median["student"][size] / median["teacher"][size] for size in ("1", "32")}
    return {
        "serving": median,
        "speedup": speedup,
        "rounds": args.serving_rounds,
        "iterations": args.serving_iterations,
        "load": os.getloadavg(),
    }


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", nargs="+", default=["sst2", "mrpc"], choices=list(TASK_DIRS))
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--train-examples", type=int, default=4000)
    parser.add_argument(
        "--teacher-examples",
        type=int,
        default=None,
        help="training rows the teacher is fine-tuned on (default: --train-examples; the "
        "students always get --train-examples)",
    )
    parser.add_argument("--teacher-steps", type=int, default=800)
    parser.add_argument("--student-steps", type=int, default=400)
    parser.add_argument("--max-seq-length", type=int, default=64)
    parser.add_argument("--learning-rate", type=float, default=5e-4)
    parser.add_argument("--features", default="mean_tokens", help="the classifier's input")
    parser.add_argument("--alpha", type=float, default=0.7)
    parser.add_argument("--temperature", type=float, default=2.0)
    parser.add_argument(
        "--hidden-weight", type=float, default=0.0, help="TinyBERT's hidden-state pairs' weight"
    )
    parser.add_argument(
        "--attention-weight", type=float, default=0.0, help="TinyBERT's attention pairs' weight"
    )
    parser.add_argument("--serving-iterations", type=int, default=30)
    parser.add_argument("--serving-rounds", type=int, default=5)
    parser.add_argument(
        "--serve",
        nargs=2,
        metavar=("TEACHER", "STUDENT"),
        help="only measure two fine-tuned models' sequences/s (model.keras files), side by side",
    )
    parser.add_argument("--workdir", default=None, help="default: a temporary directory")
    return parser.parse_args(argv)


def main(argv=None) -> None:
    args = parse_args(argv)
    if args.serve:
        print(json.dumps({"cpu": cpu_model(), **serving_side_by_side(*args.serve, args)}))
        return
    import tempfile

    work = Path(args.workdir or tempfile.mkdtemp(prefix="distill-bench-"))
    print(
        json.dumps(
            {
                "cpu": cpu_model(),
                "cores": os.cpu_count(),
                "load": os.getloadavg(),
                "settings": vars(args),
            }
        ),
        flush=True,
    )
    try:
        for task in args.tasks:
            print(json.dumps(run_task(args, task, work / task)), flush=True)
    finally:
        if not args.workdir:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
