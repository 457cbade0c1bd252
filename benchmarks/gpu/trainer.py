"""The real trainer measured: `python -m model.pretrain` itself (Grain input with worker processes,
bf16, attention over the sequences' lengths on a GPU) on real shards, against the synthetic step of
the same preset and batch (`benchmarks/gpu/train.py`); then one resume from its checkpoint and one
`model.finetune` run (SST-2) from its export.

    # here: our own stages write the shards from ../shared/data (books + Wikipedia), dynamic masking
    python benchmarks/gpu/trainer.py prepare --output .shards [--seqs 128,512] [--max-mib 60]
    # on the device (carry .shards), or on CPU JAX to check the mode end to end:
    python benchmarks/gpu/trainer.py run --shards .shards --work /tmp/runs
        [--rows albert-base:128,albert-large:512] [--steps 200] [--batch-tokens 32768]
        [--input-workers N] [--finetune-steps 300]

The shards (about 41 MiB at s128 + s512) travel in a device call of their own: the wheelhouse
(`wheelhouse.py`) fills another, and a warm machine keeps both between calls.

`run` prints one JSON line per row: the whole loop's steady sequences/s (training records after
the first, which holds the compilation) against the synthetic step's, the share of the loop spent
waiting for input, MFU on real (non-padding) tokens only, and the resume; then one line for the
finetune run. Goals (issue 27, one H100): loop >= 0.95x the synthetic step; real-token MFU >= 45%
(albert-large s512 bf16) and >= 40% (albert-base s128).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SHARED = ROOT.parent / "shared" / "data"
SPM_MODEL = SHARED / "reference" / "sp16k.model"
WIKIPEDIA = "wikipedia/enwiki-latest-pages-articles1.xml-p000000010p000030302-shortened.bz2"


def stage(module: str, *flags: str) -> dict:
    """Run one of our stages as its command line; its JSON summary (or exit with its error)."""
    done = subprocess.run(
        [sys.executable, "-m", module, *flags],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode:
        sys.exit(f"{module} failed ({done.returncode}): {done.stderr.strip()[-2000:]}")
    return json.loads(done.stdout[done.stdout.index("{") :])


def prepare(output: Path, seqs: list[int], max_mib: float) -> None:
    """Segment the books and Wikipedia sample, write dynamic-masking shards at each length."""
    segmented = output / "segmented"
    stage(
        "pipelines.segment",
        *("--input", str(SHARED / "books"), "--input", str(SHARED / WIKIPEDIA)),
        *("--output", str(segmented), "--fallback-encoding", "latin-1", "--num-shards", "4"),
    )
    for seq in seqs:
        stage(
            "pipelines.tfrecords",
            *("--input", str(segmented), "--spm-model", str(SPM_MODEL)),
            *("--output", str(output / f"s{seq}"), "--max-seq-length", str(seq)),
            *("--max-predictions-per-seq", str(max(1, round(seq * 20 / 128)))),
            *("--masking", "dynamic", "--num-shards", "4"),
        )
    shutil.rmtree(segmented)  # our scratch: only the shards travel
    size = sum(p.stat().st_size for p in output.rglob("*") if p.is_file()) / 2**20
    print(json.dumps({"shards": str(output), "mib": round(size, 1), "max_mib": max_mib}))
    if size > max_mib:
        sys.exit(f"{output}: {size:.1f} MiB of shards, over --max-mib {max_mib}")


def steady_sequences_per_second(run_dir: Path) -> float:
    """Mean sequences/s of the training records after the first (which holds the compilation)."""
    lines = (run_dir / "metrics.jsonl").read_text().splitlines()
    rates = [r["sequences_per_second"] for r in map(json.loads, lines) if r["split"] == "train"]
    return sum(rates[1:]) / len(rates[1:]) if len(rates) > 1 else rates[0]


def pretrain(data: Path, output: Path, preset: str, steps: int, batch: int, workers) -> dict:
    flags = [
        *("--data", str(data), "--output", str(output), "--preset", preset),
        *("--steps", str(steps), "--batch-size", str(batch), "--precision", "bfloat16"),
        *("--input", "grain", "--warmup-steps", str(max(1, steps // 10))),
        *("--log-every", str(max(1, steps // 10)), "--checkpoint-every", str(max(1, steps // 2))),
        *("--eval-every", "0", "--eval-batches", "2", "--no-progress", "--no-check-data"),
        *("--spm-model", str(SPM_MODEL)),
    ]
    return stage("model.pretrain", *flags, *(["--input-workers", str(workers)] if workers else []))


def synthetic(preset: str, seq: int, batch: int) -> dict:
    done = subprocess.run(
        [sys.executable, str(Path(__file__).with_name("train.py")), "--row", f"{preset}:{seq}"]
        + ["--batch-tokens", str(batch * seq), "--steps", "10", "--warmup", "2"],
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode:
        sys.exit(f"train.py --row {preset}:{seq} failed: {done.stderr.strip()[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def measure_row(args, preset: str, seq: int) -> dict:
    batch = max(1, args.batch_tokens // seq)
    output = Path(args.work) / f"{preset}-s{seq}"
    data = Path(args.shards) / f"s{seq}"
    result = pretrain(data, output, preset, args.steps, batch, args.input_workers)
    loop = steady_sequences_per_second(output)
    step = synthetic(preset, seq, batch)
    extra = max(1, args.steps // 4)
    resumed = pretrain(data, output, preset, args.steps + extra, batch, args.input_workers)
    records = (output / "metrics.jsonl").read_text().splitlines()
    peak = step.get("peak_bf16_tflops")
    real_tokens = loop * seq * result["real_token_share"]
    return {
        "row": "trainer",
        "preset": preset,
        "seq": seq,
        "batch": batch,
        "device": step["device"],
        "loop_seq_per_s": round(loop, 1),
        "synthetic_seq_per_s": step["sequences_per_s"],
        "loop_over_synthetic": round(loop / step["sequences_per_s"], 3),
        "input_wait_share": result["input_wait_share"],
        "real_token_share": result["real_token_share"],
        "real_token_mfu": round(real_tokens * step["flops_per_token"] / (peak * 1e12), 4)
        if peak
        else None,
        "flash_attention_in_synthetic_step": step["flash_attention"],
        "resumed_to_step": resumed["steps"],
        "resume_continued_records": json.loads(records[-1])["step"] == args.steps + extra,
        "export": result["export"].get("keras"),
    }


def finetune(model: str, work: Path, steps: int) -> dict:
    summary = stage(
        "model.finetune",
        *("--task", "sst2", "--init", model, "--spm-model", str(SPM_MODEL)),
        *("--data-dir", str(SHARED / "glue" / "SST-2"), "--output", str(work / "finetune-sst2")),
        *("--train-steps", str(steps), "--batch-size", "32", "--max-seq-length", "128"),
    )
    return {"row": "finetune", "task": "sst2", "steps": steps, "summary": summary}


def main() -> int:
    os.environ.setdefault("KERAS_BACKEND", "jax")
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    build = commands.add_parser("prepare")
    build.add_argument("--output", required=True)
    build.add_argument("--seqs", default="128,512")
    build.add_argument(
        "--max-mib", type=float, default=60.0, help="a device call carries at most 64 MiB"
    )
    measure = commands.add_parser("run")
    measure.add_argument("--shards", required=True)
    measure.add_argument("--work", required=True)
    measure.add_argument("--rows", default="albert-base:128,albert-large:512")
    measure.add_argument("--steps", type=int, default=200)
    measure.add_argument("--batch-tokens", type=int, default=32768)
    measure.add_argument("--input-workers", type=int, default=None)
    measure.add_argument("--finetune-steps", type=int, default=300)
    args = parser.parse_args()
    if args.command == "prepare":
        prepare(Path(args.output), [int(s) for s in args.seqs.split(",")], args.max_mib)
        return 0
    rows = []
    for row in args.rows.split(","):
        preset, seq = row.split(":")
        rows.append(measure_row(args, preset, int(seq)))
        print(json.dumps(rows[-1]), flush=True)
    if args.finetune_steps:
        print(json.dumps(finetune(rows[0]["export"], Path(args.work), args.finetune_steps)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
