"""Learning parity with Hugging Face: our pretraining (TF and JAX backends) against transformers'
AlbertForPreTraining trained on the same batches from the same start.

    python -m benchmarks.learning_parity [--data DIR] [--preset albert-tiny] [--steps 2000]
        [--batch-size 32] [--seeds 1 2] [--sides tf jax hf lamb] [--eval-points 5] ...

- Same start: per seed, albert-`--preset` is built (Keras, that seed), exported untrained with
  `export_huggingface`; every side starts from that export (ours with `--init`).
- Same data, same order: static-mask TFRecords (seq 128; default: the shared books + Wikipedia built
  with our stages, `--dupe-factor` passes, 10% of documents held out whole). They must hold one
  training shard: the Hugging Face side reads it with `decode_example` in the order our input gives
  (`window_permutation` per window of `--shuffle-buffer` records, per epoch), checked at batch 1.
- Same optimisation: AdamW (β 0.9/0.999, ε 1e-6, weight decay 0.01 off LayerNorm and biases, the
  patterns of `model.optimization.weight_decay.DEFAULT_EXCLUDE`), global-norm clipping 1.0, our
  warmup + linear decay (`WarmupPolynomialDecay`'s formula on both sides), float32, dropout as the
  preset. `lamb` is our LAMB, for information.
- Measured: training loss per `--log-every` window, held-out masked-LM accuracy/loss and SOP
  accuracy at `--eval-points` points (the first `--eval-batches` x 64 held-out sequences: documents
  never trained on), training seconds to each point (evaluations excluded), each side's wall time.

Prints one JSON line per row (side, seed) and a last line comparing them
(`learning_parity_report.py`, which also rereads a log); plots the curves to
WORKDIR/learning_parity.png.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]

from albert.pretraining_example import decode_example
from albert.tfrecord_framing import tfrecord_records
from benchmarks.helpers.machine import cpu_model
from benchmarks.learning_parity_report import KEYS, compare, plot
from benchmarks.pretrain_quality import tfrecords
from benchmarks.tfrecords import segmented_corpus
from model.input.records import inspect_data, split_files, window_permutation
from model.optimization.weight_decay import is_excluded

EVAL_BATCH_SIZE = 64
INT_NAMES = ("input_ids", "input_mask", "segment_ids", "masked_lm_positions", "masked_lm_ids")


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workdir", default="/tmp/albert-learning-parity")
    parser.add_argument("--data", help="static-mask TFRecords with one training shard")
    parser.add_argument("--dupe-factor", type=int, default=3, help="passes when building --data")
    parser.add_argument("--preset", default="albert-tiny")
    parser.add_argument("--architecture", default="{}", help="AlbertConfig fields over the preset")
    parser.add_argument("--steps", type=int, default=2000)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--learning-rate", type=float, default=1e-3)
    parser.add_argument("--warmup-steps", type=int, default=200)
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--sides", nargs="+", default=["tf", "jax", "hf", "lamb"])
    parser.add_argument("--eval-points", type=int, default=5)
    parser.add_argument("--eval-batches", type=int, default=16, help="of 64 held-out sequences")
    parser.add_argument("--log-every", type=int, default=20)
    parser.add_argument("--shuffle-buffer", type=int, default=10_000)
    return parser.parse_args(argv)


def schedule(step: int, args) -> float:
    """`model.optimization.optimizers.WarmupPolynomialDecay` (power 1, end 0) at `step`, as a
    float."""
    if step < args.warmup_steps:
        return args.learning_rate * step / args.warmup_steps
    return args.learning_rate * (1.0 - min(step, args.steps) / args.steps)


def initial_export(workdir: Path, args, seed: int, vocab_size: int) -> Path:
    """Per seed: our model built untrained and exported for Hugging Face (every side's start)."""
    from model.conversion.hf import export_huggingface  # heavy: Keras (backend set first)
    from model.pretrain import PretrainConfig, build_model  # heavy: Keras (backend set first)

    target = workdir / f"init-{args.preset}-{seed}"
    if not target.exists():
        config = PretrainConfig(
            data="unused", output="unused", preset=args.preset, seed=seed,
            architecture=json.loads(args.architecture),
        )  # fmt: skip
        export_huggingface(build_model(config, vocab_size), str(target))
    return target


def stacked(records: list[bytes]) -> dict[str, np.ndarray]:
    examples = [decode_example(record) for record in records]
    return {name: np.stack([e[name] for e in examples]) for name in examples[0]}


def hf_batches(train_file: str, seed: int, args):
    """Our training order over one shard: per epoch, windows of --shuffle-buffer records in file
    order, each permuted by `window_permutation`, batched dropping the epoch's remainder."""
    records = list(tfrecord_records(train_file))
    window, epoch = args.shuffle_buffer, 0
    while True:
        order = np.concatenate(
            [
                start + window_permutation(seed, epoch, number, min(window, len(records) - start))
                for number, start in enumerate(range(0, len(records), window))
            ]
        )
        for first in range(0, len(order) - args.batch_size + 1, args.batch_size):
            yield stacked([records[i] for i in order[first : first + args.batch_size]])
        epoch += 1


def torch_inputs(batch: dict[str, np.ndarray]) -> dict:
    """AlbertForPreTraining's arguments: labels -100 off the masked positions (weight 0 too)."""
    import torch  # optional: the Hugging Face side

    labels = np.full(batch["input_ids"].shape, -100, np.int64)
    rows, columns = np.nonzero(batch["masked_lm_weights"] > 0)
    labels[rows, batch["masked_lm_positions"][rows, columns]] = batch["masked_lm_ids"][
        rows, columns
    ]
    return {
        "input_ids": torch.from_numpy(batch["input_ids"]),
        "attention_mask": torch.from_numpy(batch["input_mask"]),
        "token_type_ids": torch.from_numpy(batch["segment_ids"]),
        "labels": torch.from_numpy(labels),
        "sentence_order_label": torch.from_numpy(batch["next_sentence_labels"][:, 0]),
    }


def metric_sums(output, inputs) -> np.ndarray:
    """`model.evaluation.heldout.SUM_NAMES` of one batch from Hugging Face's logits."""
    import torch  # optional: the Hugging Face side

    labels, sop = inputs["labels"], inputs["sentence_order_label"]
    masked = labels != -100
    logits = output.prediction_logits.detach()[masked]
    targets = labels[masked]
    mlm = torch.nn.functional.cross_entropy(logits, targets, reduction="sum")
    sop_logits = output.sop_logits.detach()
    sop_loss = torch.nn.functional.cross_entropy(sop_logits, sop, reduction="sum")
    return np.array(
        [
            float(mlm), float((logits.argmax(-1) == targets).sum()), float(masked.sum()),
            float(sop_loss), float((sop_logits.argmax(-1) == sop).sum()), float(len(sop)),
        ]
    )  # fmt: skip


def train_hf(init: Path, data: Path, seed: int, args, eval_steps: list[int]) -> dict:
    """AlbertForPreTraining from `init`, trained with torch AdamW on our batches."""
    import torch  # optional: the Hugging Face side
    from transformers import AlbertForPreTraining  # optional: the Hugging Face side

    from model.evaluation.heldout import metrics_from_sums  # heavy: Keras (backend set first)

    torch.manual_seed(seed)
    model = AlbertForPreTraining.from_pretrained(init, dtype=torch.float32)
    named = list(model.named_parameters())
    groups = [
        {"params": [p for n, p in named if not is_excluded(n)], "weight_decay": 0.01},
        {"params": [p for n, p in named if is_excluded(n)], "weight_decay": 0.0},
    ]
    optimizer = torch.optim.AdamW(groups, lr=args.learning_rate, betas=(0.9, 0.999), eps=1e-6)
    spec = inspect_data(str(data))
    train_files, heldout_files, _ = split_files(spec)
    batches = hf_batches(train_files[0], seed, args)
    heldout = heldout_batches(heldout_files[0], args)
    train, points, window, seconds = [], [], np.zeros(6), 0.0
    start = time.perf_counter()
    for step in range(args.steps):
        inputs = torch_inputs(next(batches))
        began = time.perf_counter()
        model.train()
        for group in optimizer.param_groups:
            group["lr"] = schedule(step, args)
        output = model(**inputs)
        optimizer.zero_grad()
        output.loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        window += metric_sums(output, inputs)
        seconds += time.perf_counter() - began
        if (step + 1) % args.log_every == 0:
            train.append({"step": step + 1, **metrics_from_sums(window)})
            window[:] = 0
        if step + 1 in eval_steps:
            model.eval()
            with torch.no_grad():
                sums = sum(metric_sums(model(**inputs), inputs) for inputs in heldout)
            points.append({"step": step + 1, "train_seconds": seconds, **metrics_from_sums(sums)})
    return {"train": train, "heldout": points, "wall_seconds": time.perf_counter() - start}


def heldout_batches(path: str, args) -> list[dict]:
    """The first --eval-batches x 64 held-out records, in file order (as our evaluation reads)."""
    records = []
    for record in tfrecord_records(path):
        records.append(record)
        if len(records) == args.eval_batches * EVAL_BATCH_SIZE:
            break
    return [
        torch_inputs(stacked(records[i : i + EVAL_BATCH_SIZE]))
        for i in range(0, len(records), EVAL_BATCH_SIZE)
    ]


def train_ours(side: str, init: Path, data: Path, seed: int, args, workdir: Path) -> dict:
    """`python -m model.pretrain` in a fresh process (TF or JAX; AdamW, or LAMB for `lamb`)."""
    output = workdir / f"run-{side}-{seed}"
    subprocess.run(["rm", "-rf", str(output)], check=True)
    every = args.steps // args.eval_points
    command = [
        sys.executable, "-m", "model.pretrain", "--data", str(data), "--output", str(output),
        "--preset", args.preset, "--architecture", args.architecture, "--init", str(init),
        "--optimizer", "lamb" if side == "lamb" else "adamw", "--seed", str(seed),
        "--steps", str(args.steps), "--batch-size", str(args.batch_size),
        "--learning-rate", str(args.learning_rate), "--warmup-steps", str(args.warmup_steps),
        "--log-every", str(args.log_every), "--eval-every", str(every),
        "--eval-batches", str(args.eval_batches), "--eval-batch-size", str(EVAL_BATCH_SIZE),
        "--shuffle-buffer", str(args.shuffle_buffer), "--checkpoint-every", str(args.steps),
        "--jit-compile", "--no-export", "--no-progress",
    ]  # fmt: skip
    backend = "jax" if side == "jax" else "tensorflow"
    env = {**os.environ, "KERAS_BACKEND": backend, "PYTHONPATH": str(REPO)}
    start = time.perf_counter()
    subprocess.run(command, cwd=REPO, env=env, check=True, stdout=subprocess.DEVNULL)
    wall = time.perf_counter() - start
    records = [json.loads(line) for line in (output / "metrics.jsonl").read_text().splitlines()]
    train = [r for r in records if r["split"] == "train"]
    seconds, points = 0.0, []
    for record in records:  # training seconds: each window's steps over its steps/s
        if record["split"] == "train":
            seconds += args.log_every / record["steps_per_second"]
        else:
            points.append({**record, "train_seconds": seconds})
    return {"train": train, "heldout": points, "wall_seconds": wall}


def row_line(side: str, seed: int, run: dict) -> dict:
    return {
        "side": side,
        "seed": seed,
        "wall_seconds": round(run["wall_seconds"], 1),
        "heldout": [
            {"step": p["step"], "train_seconds": round(p["train_seconds"], 1)}
            | {k: round(p[k], 4) for k in KEYS}
            for p in run["heldout"]
        ],
        "train_loss": {r["step"]: round(r["loss"], 4) for r in run["train"]},
    }


def main(argv=None) -> None:
    args = parse_args(argv)
    workdir = Path(args.workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    data = Path(args.data) if args.data else None
    if data is None:
        corpus = segmented_corpus(workdir)
        data = tfrecords(
            corpus, workdir / f"tfrecords-dupe{args.dupe_factor}", args.dupe_factor, 1, 0.1
        )
    spec = inspect_data(str(data))
    train_files, _, _ = split_files(spec)
    if len(train_files) != 1 or spec.masking != "static":
        sys.exit(f"{data}: needs static masks in one training shard (got {len(train_files)})")
    check_order(spec, train_files[0], args)
    eval_steps = [args.steps // args.eval_points * (i + 1) for i in range(args.eval_points)]
    print(
        json.dumps({"cpu": cpu_model(), "load": os.getloadavg()[0], "args": vars(args)}), flush=True
    )
    rows = []
    for seed in args.seeds:
        init = initial_export(workdir, args, seed, spec.vocab_size)
        for side in args.sides:
            if side == "hf":
                run = train_hf(init, data, seed, args, eval_steps)
            else:
                run = train_ours(side, init, data, seed, args, workdir)
            rows.append(row_line(side, seed, run))
            print(json.dumps(rows[-1]), flush=True)
    plot(rows, workdir / "learning_parity.png")
    print(json.dumps({"summary": compare(rows)}), flush=True)


def check_order(spec, train_file: str, args) -> None:
    """The reader's first batch is our input's first batch (Grain, seed 1), record for record."""
    from model.input import grain as grain_input  # heavy: Keras (backend set first)

    seed = args.seeds[0]
    ours = next(iter(grain_input.train_batches(spec, args.batch_size, epoch=0, seed=seed,
                                               shuffle_buffer=args.shuffle_buffer)))  # fmt: skip
    theirs = next(hf_batches(train_file, seed, args))
    for name in INT_NAMES:
        if not np.array_equal(ours[name], theirs[name]):
            sys.exit(f"the Hugging Face reader's first batch differs from ours in {name}")


if __name__ == "__main__":
    main()
