"""The real trainer measured: `python -m model.pretrain` itself (Grain input with worker processes,
bf16, attention over the sequences' lengths on a GPU) on real shards, against the synthetic step of
the same preset and batch (`benchmarks/gpu/train.py`); then one resume from its checkpoint and one
`model.finetune` run (SST-2) from its export.

    # here: our own stages write the shards from ../shared/data (books + Wikipedia), dynamic masking
    python benchmarks/gpu/trainer.py prepare --output .shards [--seqs 128,512] [--max-mib 60]
        [--no-wikipedia]
    # on the device (carry .shards), or on CPU JAX to check the mode end to end:
    python benchmarks/gpu/trainer.py run --shards .shards --work /tmp/runs
        [--rows albert-base:128,albert-large:512] [--steps 200] [--batch-tokens 32768]
        [--input-workers N] [--length-buckets K] [--finetune-steps 300]

The shards (about 41 MiB at s128 + s512) travel in a device call of their own: the wheelhouse
(`wheelhouse.py`) fills another, and a warm machine keeps both between calls;
`benchmarks/gpu/check.py` carries a smaller set with the wheelhouse in one call.

`run` prints one JSON line per row, from the run's own summary (each row trains in a new output
directory under --work: a previous run's records never mix in): the steady sequences/s (steps
without a compilation, evaluation or checkpoint) against the synthetic step's, the whole loop's
rate apart (compilations and input waits included), the share of the loop spent waiting for input,
the real (non-padding) tokens' share and MFU on them, the step's compilations and length buckets,
and the resume; then one line for the finetune run. Goals (issue 37, one H100): steady loop >=
0.97x the synthetic step; with buckets, real-token MFU >= 40% at albert-large s512.
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
    return summary_of(done.stdout)


def summary_of(stdout: str) -> dict:
    """A stage's JSON summary: the object its stdout ends with (after any other lines)."""
    return json.loads(stdout[stdout.index("{") :])


def resume_steps(steps: int) -> int:
    """The step a resume of a `steps`-step run trains to: a quarter more, at least one."""
    return steps + max(1, steps // 4)


def last_step(output: Path) -> int:
    """The step of the last record in OUTPUT/metrics.jsonl."""
    return json.loads((output / "metrics.jsonl").read_text().splitlines()[-1])["step"]


def prepare(
    output: Path, seqs: list[int], max_mib: float, wikipedia: bool = True, leave_out: tuple = ()
) -> None:
    """Segment the books but those named in `leave_out` (and the Wikipedia sample), write
    dynamic-masking shards at each length."""
    segmented = output / "segmented"
    books = sorted(p for p in (SHARED / "books").glob("*.txt") if p.name not in leave_out)
    inputs = [flag for book in books for flag in ("--input", str(book))]
    if wikipedia:
        inputs += ["--input", str(SHARED / WIKIPEDIA)]
    stage(
        "pipelines.segment",
        *inputs,
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


def pretrain_flags(
    data: Path,
    output: Path,
    preset: str,
    steps: int,
    batch: int,
    workers: int | None = None,
    buckets: int | None = None,
    spm_model: Path = SPM_MODEL,
) -> list[str]:
    """`python -m model.pretrain`'s flags for a measured run (bf16, Grain, no evaluation until the
    end); `workers` and `buckets` None leave the trainer's defaults."""
    return [
        *("--data", str(data), "--output", str(output), "--preset", preset),
        *("--steps", str(steps), "--batch-size", str(batch), "--precision", "bfloat16"),
        *("--input", "grain", "--warmup-steps", str(max(1, steps // 10))),
        *("--log-every", str(max(1, steps // 10)), "--checkpoint-every", str(max(1, steps // 2))),
        *("--eval-every", "0", "--eval-batches", "2", "--no-progress", "--no-check-data"),
        *("--spm-model", str(spm_model)),
        *(["--input-workers", str(workers)] if workers is not None else []),
        *(["--length-buckets", str(buckets)] if buckets is not None else []),
    ]


def loop_row(summary: dict, step: dict) -> dict:
    """The loop's figures from a run's summary against the synthetic step `step` (train.py's row):
    MFU on the real tokens of the steady steps (model FLOPs per token at the data's length: with
    length buckets the attention part is slightly overstated)."""
    steady, peak = summary["steady_sequences_per_second"], step.get("peak_bf16_tflops")
    real_tokens = summary["steady_real_tokens_per_second"]
    return {
        "steady_seq_per_s": steady,
        "loop_seq_per_s": summary["loop_sequences_per_second"],
        "synthetic_seq_per_s": step["sequences_per_s"],
        "steady_over_synthetic": round(steady / step["sequences_per_s"], 3) if steady else None,
        "input_wait_share": summary["input_wait_share"],
        "real_token_share": summary["real_token_share"],
        "real_token_mfu": round(real_tokens * step["flops_per_token"] / (peak * 1e12), 4)
        if peak and real_tokens
        else None,
        "step_compilations": summary["step_compilations"],
        "length_buckets": summary["length_buckets"],
    }


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
    if output.exists():  # a run there would resume, and its records mix in: measure a new one
        sys.exit(f"{output} exists: each row trains a new run; give a new --work")
    data = Path(args.shards) / f"s{seq}"
    options = (args.input_workers, args.length_buckets)
    result = stage(
        "model.pretrain", *pretrain_flags(data, output, preset, args.steps, batch, *options)
    )
    step = synthetic(preset, seq, batch)
    more = resume_steps(args.steps)
    resumed = stage("model.pretrain", *pretrain_flags(data, output, preset, more, batch, *options))
    return {
        "row": "trainer",
        "preset": preset,
        "seq": seq,
        "batch": batch,
        "device": step["device"],
        **loop_row(result, step),
        "flash_attention_in_synthetic_step": step["flash_attention"],
        "resumed_to_step": resumed["steps"],
        "resume_continued_records": last_step(output) == more,
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
    build.add_argument("--no-wikipedia", dest="wikipedia", action="store_false")
    measure = commands.add_parser("run")
    measure.add_argument("--shards", required=True)
    measure.add_argument("--work", required=True)
    measure.add_argument("--rows", default="albert-base:128,albert-large:512")
    measure.add_argument("--steps", type=int, default=200)
    measure.add_argument("--batch-tokens", type=int, default=32768)
    measure.add_argument("--input-workers", type=int, default=None)
    measure.add_argument("--length-buckets", type=int, default=None)
    measure.add_argument("--finetune-steps", type=int, default=300)
    args = parser.parse_args()
    if args.command == "prepare":
        seqs = [int(s) for s in args.seqs.split(",")]
        prepare(Path(args.output), seqs, args.max_mib, args.wikipedia)
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
