"""`--objective rtd` measured on CPU: replaced-token detection against masked-LM at equal compute,
fine-tuned on SST-2 and MRPC over seeds; the generator's cost per step; and today's masked-LM
pretraining speed against the commit before RTD (A/B in one run).

    python -m benchmarks.rtd [--data runs/enwiki-sample/tfrecords] [--preset albert-tiny] \
        [--mlm-steps 400] [--batch-size 32] [--seeds 10] [--finetune-steps 120] \
        [--before REV] [--speed-steps 60] [--speed-rounds 3] [--workdir DIR] [--phases ...]

The data is a finished `make run`'s (`runs/enwiki-sample`: its TFRecords, seq 64, and its
SentencePiece vocabulary). Phases (all by default):
- `speed`: `python -m model.pretrain` processes (TensorFlow, float32) of `--speed-steps` steps,
  alternated `--speed-rounds` times: masked-LM at this checkout and at `--before` (a `git worktree`
  of the commit before RTD), and RTD here with a generator of 1/4 and of 1/2 the width; steady
  sequences/s each, the median per arm, the ratios.
- `program`: the masked-LM JAX training step (albert-tiny, batch 32 x 64) lowered to StableHLO at
  this checkout and at `--before`, each in a fresh process: the sha256 of the program text (equal
  digests: the same program, so the same speed whatever the machine's load).
- `quality`: the same discriminator (`--preset`) pretrained with each objective on the same data
  and seed for the same training FLOPs (`training_flops_per_token`, the generator's counted): MLM
  `--mlm-steps` steps, RTD the steps that cost as much; each export fine-tuned (`albert finetune`,
  `--finetune-steps`, the first `--train-examples` training rows) on SST-2 and MRPC with seeds
  0..`--seeds`-1, scored on the whole dev set; Welch's t over the seeds.

Prints one JSON line per measurement and one summary line per phase, with the CPU model and load.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.helpers.machine import cpu_model

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared" / "data"
TASK_DIRS = {"sst2": "SST-2", "mrpc": "MRPC"}
BEFORE = "e4d8bd2"  # the commit before `--objective rtd`


def training_flops_per_token(config, seq: int, predictions: int, heads: str) -> float:
    """Training FLOPs per token (6 per parameter applied, forward and backward, plus attention's
    12 L H T) of an ALBERT encoder and its `heads`: `mlm` (dense H->E, tied E->V at `predictions`
    of `seq` positions), `sop` (pooler and classifier, once a sequence), `rtd` (dense H->H and H->1
    at every token)."""
    h, e, f, v, layers = (
        config.hidden_size,
        config.embedding_size,
        config.intermediate_size,
        config.vocab_size,
        config.num_hidden_layers,
    )
    applied = layers * (4 * h * h + 2 * h * f) + (e * h if config.has_embedding_projection else 0)
    applied += (h * e + e * v) * predictions / seq if "mlm" in heads else 0
    applied += (h * h + 2 * h) / seq if "sop" in heads else 0
    applied += h * h + h if "rtd" in heads else 0
    return 6 * applied + 12 * layers * h * seq


def objective_flops(config, fraction: float, seq: int, predictions: int) -> dict:
    """FLOPs per token of a step of each objective: MLM (encoder, MLM and SOP heads); RTD (the
    generator with its MLM head, the discriminator with its RTD and SOP heads)."""
    from model.network.electra import generator_config

    mlm = training_flops_per_token(config, seq, predictions, "mlm+sop")
    generator = training_flops_per_token(
        generator_config(config, fraction), seq, predictions, "mlm"
    )
    discriminator = training_flops_per_token(config, seq, predictions, "rtd+sop")
    return {"mlm": mlm, "rtd": generator + discriminator, "generator": generator}


def machine() -> dict:
    return {"cpu": cpu_model(), "cores": os.cpu_count(), "load_1m": round(os.getloadavg()[0], 2)}


def emit(**record) -> None:
    """One JSON line: `record`, the CPU and its load."""
    print(json.dumps({**record, **machine()}), flush=True)


def pretrain(tree: Path, data: Path, output: Path, **flags) -> dict:
    """`python -m model.pretrain` of the checkout at `tree` in a fresh process, into a new
    `output`; its summary."""
    shutil.rmtree(output, ignore_errors=True)
    argv = [sys.executable, "-m", "model.pretrain", "--data", str(data), "--output", str(output)]
    for name, value in flags.items():
        flag = f"--{name.replace('_', '-')}"
        argv += (
            [flag if value else f"--no-{flag[2:]}"]
            if isinstance(value, bool)
            else [flag, str(value)]
        )
    env = {**os.environ, "PYTHONPATH": str(tree), "TF_CPP_MIN_LOG_LEVEL": "2"}
    done = subprocess.run(argv, check=False, cwd=tree, env=env, capture_output=True, text=True)
    if done.returncode:
        raise SystemExit(f"pretrain in {tree} failed: {done.stderr.strip().splitlines()[-1:]}")
    return json.loads(done.stdout[done.stdout.index("{") :])  # the summary, indented JSON


def common_flags(args) -> dict:
    return {
        "preset": args.preset,
        "batch_size": args.batch_size,
        "spm_model": str(args.spm_model),
        "log_every": 20,
        "eval_every": 0,
        "eval_batches": 4,
        "checkpoint_every": 10**6,
        "progress": False,
        "jit_compile": False,
        "input_workers": 0,
        "check_data": False,
    }


def worktree(rev: str, work: Path) -> Path:
    """A `git worktree` of `rev` at `work/before` (made once; removed when the benchmark ends)."""
    work.mkdir(parents=True, exist_ok=True)
    before = work / "before"
    if not before.exists():
        add = ["worktree", "add", "--detach", str(before), rev]
        subprocess.run(["git", "-C", str(REPO), *add], check=True, capture_output=True)
    return before


def speed(args, work: Path) -> dict:
    """The `speed` phase (module docstring)."""
    before = worktree(args.before, work)
    arms = {
        "mlm_before": (before, {}),
        "mlm_after": (REPO, {}),
        "rtd": (REPO, {"objective": "rtd", "generator_hidden_fraction": 0.25}),
        "rtd_half": (REPO, {"objective": "rtd", "generator_hidden_fraction": 0.5}),
    }
    rates: dict[str, list[float]] = {name: [] for name in arms}
    for round_ in range(args.speed_rounds):
        for name, (tree, objective) in arms.items():
            flags = {**common_flags(args), "steps": args.speed_steps, "export": False, **objective}
            output = work / f"speed-{name}-{round_}"
            summary = pretrain(tree, args.data, output, **flags)
            rates[name].append(summary["steady_sequences_per_second"])
            emit(phase="speed", arm=name, round=round_, sequences_per_second=rates[name][-1])
    median = {name: statistics.median(values) for name, values in rates.items()}
    return {
        "phase": "speed",
        "steps": args.speed_steps,
        "batch_size": args.batch_size,
        "median_sequences_per_second": median,
        "mlm_after_over_before": median["mlm_after"] / median["mlm_before"],
        "rtd_over_mlm_step_time": median["mlm_after"] / median["rtd"],
        "rtd_half_over_mlm_step_time": median["mlm_after"] / median["rtd_half"],
    }


STEP_PROGRAM = """
import hashlib, os
os.environ["KERAS_BACKEND"] = "jax"
import keras, numpy as np
from model.network.config import get_preset
from model.network.pretraining_model import AlbertPretrainingModel
from model.pretrain.build import build_training_optimizer
from model.pretrain.config import PretrainConfig
from model.pretrain.jax_step import JaxState, jax_train_step
keras.utils.set_random_seed(0)
model = AlbertPretrainingModel(get_preset("albert-tiny", vocab_size=8000))
optimizer, _ = build_training_optimizer(PretrainConfig(data="-", output="-", steps=10))
optimizer.build(model.trainable_variables)
rng, (b, t, p) = np.random.default_rng(0), (32, 64, 10)
ids = lambda high, shape: rng.integers(1, high, shape).astype("int32")
batch = {"input_ids": ids(8000, (b, t)), "input_mask": np.ones((b, t), "int32"),
         "segment_ids": np.zeros((b, t), "int32"), "masked_lm_positions": ids(t, (b, p)),
         "masked_lm_ids": ids(8000, (b, p)), "masked_lm_weights": np.ones((b, p), "float32"),
         "next_sentence_labels": np.zeros((b, 1), "int32")}
step, _ = jax_train_step(model, optimizer, 1)
text = step.lower(JaxState(model, optimizer).values, batch).as_text()
print(hashlib.sha256(text.encode()).hexdigest(), len(text))
"""


def program(args, work: Path) -> dict:
    """The `program` phase (module docstring)."""
    before = worktree(args.before, work)
    digests = {}
    for name, tree in (("mlm_before", before), ("mlm_after", REPO)):
        env = {**os.environ, "PYTHONPATH": str(tree), "TF_CPP_MIN_LOG_LEVEL": "2"}
        argv = [sys.executable, "-c", STEP_PROGRAM]
        done = subprocess.run(argv, check=True, cwd=tree, env=env, capture_output=True, text=True)
        digest, length = done.stdout.split()[-2:]
        digests[name] = {"sha256": digest, "characters": int(length)}
    same = digests["mlm_before"]["sha256"] == digests["mlm_after"]["sha256"]
    return {"phase": "program", "step_programs": digests, "identical": same}


def finetune_scores(args, init: str, task: str, work: Path) -> list[float]:
    """Dev scores (the task's primary metric) of `init` fine-tuned on `task` with each seed."""
    from model import finetune  # heavy: Keras

    scores = []
    for seed in range(args.seeds):
        results = finetune.run(
            finetune.FinetuneConfig(
                task=task,
                init=init,
                spm_model=str(args.spm_model),
                data_dir=str(args.glue / TASK_DIRS[task]),
                output=str(work / f"{task}-{seed}"),
                max_seq_length=64,
                max_train_examples=args.train_examples,
                batch_size=32,
                learning_rate=args.finetune_learning_rate,
                train_steps=args.finetune_steps,
                warmup_steps=args.finetune_steps // 10,
                eval_every=args.finetune_steps,
                checkpoint_every=10**6,
                seed=seed,
                quiet=True,
            )
        )
        scores.append(float(results["dev"][results.get("primary_metric") or "accuracy"]))
    return scores


def welch(rtd: list[float], mlm: list[float]) -> dict:
    from scipy import stats  # the bench extra

    test = stats.ttest_ind(rtd, mlm, equal_var=False)
    return {
        "rtd_mean": statistics.mean(rtd),
        "rtd_sd": statistics.stdev(rtd),
        "mlm_mean": statistics.mean(mlm),
        "mlm_sd": statistics.stdev(mlm),
        "difference": statistics.mean(rtd) - statistics.mean(mlm),
        "welch_t": float(test.statistic),
        "welch_p_two_sided": float(test.pvalue),
    }


def quality(args, work: Path) -> dict:
    """The `quality` phase (module docstring)."""
    from model.network.config import get_preset

    work.mkdir(parents=True, exist_ok=True)
    metadata = json.loads((args.data / "metadata.json").read_text())
    config = get_preset(args.preset, vocab_size=metadata["vocab_size"])
    seq, predictions = metadata["max_seq_length"], metadata["max_predictions_per_seq"]
    flops = objective_flops(config, args.generator_hidden_fraction, seq, predictions)
    steps = {"mlm": args.mlm_steps, "rtd": round(args.mlm_steps * flops["mlm"] / flops["rtd"])}
    runs = {}
    for objective, count in steps.items():
        output = work / f"pretrain-{objective}"
        flags = {**common_flags(args), "steps": count, "warmup_steps": count // 10}
        flags.update({"learning_rate": args.learning_rate, "objective": objective})
        flags["generator_hidden_fraction"] = args.generator_hidden_fraction
        begun = time.monotonic()
        summary = pretrain(REPO, args.data, output, **flags)
        runs[objective] = {
            "init": str(output / "export" / "model.keras"),
            "steps": count,
            "seconds": round(time.monotonic() - begun, 1),
            "heldout": {k: round(v, 4) for k, v in summary["heldout"].items()},
            "training_flops": flops[objective] * count * args.batch_size * seq,
        }
        emit(phase="quality", pretrain=objective, **runs[objective])
    tasks = {}
    for task in args.tasks:
        scores = {}
        for objective, run in runs.items():
            begun = time.monotonic()
            scores[objective] = finetune_scores(args, run["init"], task, work / objective)
            seconds = round(time.monotonic() - begun, 1)
            emit(phase="quality", task=task, objective=objective, scores=scores[objective])
            emit(phase="quality", task=task, objective=objective, seconds=seconds)
        tasks[task] = {"seeds": args.seeds, **welch(scores["rtd"], scores["mlm"])}
    return {
        "phase": "quality",
        "preset": args.preset,
        "generator_hidden_fraction": args.generator_hidden_fraction,
        "flops_per_token": flops,
        "steps": steps,
        "tasks": tasks,
    }


PHASES = {"speed": speed, "program": program, "quality": quality}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=REPO / "runs/enwiki-sample/tfrecords")
    parser.add_argument("--spm-model", type=Path, default=None)
    parser.add_argument("--glue", type=Path, default=SHARED / "glue")
    parser.add_argument("--preset", default="albert-tiny")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--mlm-steps", type=int, default=400)
    parser.add_argument("--learning-rate", type=float, default=2e-3)
    parser.add_argument("--generator-hidden-fraction", type=float, default=0.25)
    parser.add_argument("--tasks", nargs="+", default=["sst2", "mrpc"])
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--finetune-steps", type=int, default=120)
    parser.add_argument("--finetune-learning-rate", type=float, default=1e-3)
    parser.add_argument("--train-examples", type=int, default=2000)
    parser.add_argument("--before", default=BEFORE)
    parser.add_argument("--speed-steps", type=int, default=60)
    parser.add_argument("--speed-rounds", type=int, default=3)
    parser.add_argument("--phases", nargs="+", default=["speed", "program", "quality"])
    parser.add_argument("--workdir", type=Path, default=None)
    args = parser.parse_args()
    args.spm_model = args.spm_model or args.data.parent / "vocab" / "spiece.model"
    if not (args.data / "metadata.json").is_file() or not args.glue.is_dir():
        print(json.dumps({"skipped": f"needs {args.data} (`make run`) and {args.glue}"}))
        return
    with tempfile.TemporaryDirectory() as scratch:
        work = args.workdir or Path(scratch)
        work.mkdir(parents=True, exist_ok=True)
        try:
            for phase in args.phases:
                emit(summary=PHASES[phase](args, work / phase))
        finally:
            for phase in args.phases:
                if (work / phase / "before").exists():
                    remove = ["worktree", "remove", "--force", str(work / phase / "before")]
                    subprocess.run(["git", "-C", str(REPO), *remove], check=False)


if __name__ == "__main__":
    main()
