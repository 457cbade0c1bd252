"""The accelerator path, whole, in one device command: the GPU kit installed from its wheelhouse,
the real trainer at albert-base s128 and albert-large s512 without and with length buckets (each
run under a timeout that turns a hang into a failure; its exit code and its exit after the summary
checked), a resume, a fine-tune from the export, and Hugging Face's `AlbertForPreTraining` on the
same device and shapes (`torch.compile`, and eager with --hf-eager; bf16) where torch has a GPU.
Prints one table, then one JSON line; exits 1 when a check fails.

    # here, in the project's venv (the registry and ../shared/data): the kit, one folder
    python benchmarks/gpu/check.py prepare --kit .gpu-check [--python-version 3.12]
    # on the device, carrying .gpu-check (with this checkout: under 64 MiB), as its first command:
    python benchmarks/gpu/check.py run --kit .gpu-check --work /tmp/gpu-check
    # here, on CPU JAX, end to end with tiny settings:
    python benchmarks/gpu/check.py run --kit .gpu-check --work /tmp/gpu-check --tiny

The kit: `wheelhouse/` (`wheelhouse.py`, for the device's Python), `shards/s128` and `shards/s512`
(`trainer.py prepare`, the books only, dynamic masking), the reference SentencePiece model and
SST-2's dev set with the first rows of its training set. `run` installs the wheelhouse into
`--work`/site and runs every command on it, not on this checkout; the runs share one JAX
compilation cache under --work (a resume and the bucket runs do not compile again).

Goals (issue 37, one H100): steady loop >= 0.97x the synthetic step; with buckets, real-token MFU
>= 40% at albert-large s512; >= 1.5x Hugging Face's `torch.compile` on both rows.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from kit import build_kit, install, kit_problem
from trainer import (
    last_step,
    loop_row,
    pretrain_flags,
    resume_steps,
    summary_of,
)

HERE = Path(__file__).resolve().parent
EXIT_AFTER_SUMMARY_S = 10.0  # a run that has printed its summary exits within this


def timed_run(command: list[str], env: dict, args) -> dict:
    """Run `command` in its own process group under --timeout (then killed with its workers: a
    hang) or what is left of --budget (then: out of budget); its exit code, seconds, seconds from
    its summary's last line to its exit, the summary (a JSON object on stdout) and the tail of
    stderr."""
    start = time.perf_counter()
    timeout = min(args.timeout, args.deadline - start)
    if timeout < 5:
        return {"rc": "out of budget", "seconds": 0, "exit_after_summary_s": None, "summary": None,
                "stderr": ""}  # fmt: skip
    process = subprocess.Popen(
        command,
        env=env,
        cwd=args.work,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    lines, summary_at, errors = [], [], []
    readers = [
        threading.Thread(target=_read, args=(process.stdout, lines, summary_at)),
        threading.Thread(target=_read, args=(process.stderr, errors, [])),
    ]
    for reader in readers:
        reader.start()
    try:
        process.wait(timeout=timeout)
        hung = False
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
        hung = True
    for reader in readers:
        reader.join()
    end = time.perf_counter()
    text = "".join(lines)
    summary = summary_of(text) if not hung and "{" in text else None
    return {
        "rc": ("hung" if timeout == args.timeout else "out of budget")
        if hung
        else process.returncode,
        "seconds": round(end - start, 1),
        "exit_after_summary_s": round(end - summary_at[0], 2) if summary_at else None,
        "summary": summary,
        "stderr": "".join(errors)[-2000:],
    }


def _read(stream, lines: list, summary_at: list) -> None:
    for line in stream:
        lines.append(line)
        if line.rstrip() == "}" or line.startswith("{") and line.rstrip().endswith("}"):
            summary_at[:] = [time.perf_counter()]


def pretrain_run(args, env, data: Path, output: Path, preset: str, steps: int, batch: int, buckets):
    flags = pretrain_flags(
        data, output, preset, steps, batch, None, buckets, args.kit / "sp16k.model"
    )
    done = timed_run([sys.executable, "-m", "model.pretrain", *flags], env, args)
    done["ok"] = (
        done["rc"] == 0
        and done["exit_after_summary_s"] is not None
        and done["exit_after_summary_s"] <= EXIT_AFTER_SUMMARY_S
    )
    return done


def synthetic_run(args, env, preset: str, seq: int, batch: int) -> dict:
    done = timed_run(
        [sys.executable, "-m", "benchmarks.gpu.train", "--row", f"{preset}:{seq}"]
        + [
            "--batch-tokens",
            str(batch * seq),
            "--steps",
            str(args.synthetic_steps),
            "--warmup",
            "2",
        ],
        # the installed kit first; this checkout after it, for `benchmarks` alone
        {**env, "PYTHONPATH": f"{env['PYTHONPATH']}{os.pathsep}{HERE.parents[1]}"},
        args,
    )
    return done


def huggingface_skipped() -> str | None:
    """Why Hugging Face's side cannot run here (no torch, or torch without a GPU); None if it can.
    Asked once, in a process of its own (torch stays out of this one)."""
    probe = subprocess.run(
        [sys.executable, "-c", "import torch; print(torch.cuda.is_available())"],
        capture_output=True,
        text=True,
        check=False,
    )
    if probe.stdout.strip() == "True":
        return None
    return "torch has no GPU here" if probe.returncode == 0 else "no torch"


def huggingface_run(args, env: dict, preset: str, seq: int, batch: int, mode: str) -> int | str:
    """Hugging Face's sequences/s in `mode` ('compile' or 'eager'), in a process of its own on the
    installed kit (`benchmarks.pretrain` imports our model code: Keras on JAX, pydantic) with this
    checkout after it; its exit code or "out of budget" where it failed."""
    done = timed_run(
        [sys.executable, __file__, "hf", "--preset", preset, "--seq", str(seq)]
        + ["--batch", str(batch), "--mode", mode, "--steps", str(args.synthetic_steps)],
        # JAX stays off the GPU in torch's process
        {
            **env,
            "JAX_PLATFORMS": "cpu",
            "PYTHONPATH": f"{env['PYTHONPATH']}{os.pathsep}{HERE.parents[1]}",
        },
        args,
    )
    return done["summary"]["sequences_per_s"] if done["rc"] == 0 else done["rc"]


def measure_huggingface(preset: str, seq: int, batch: int, mode: str, steps: int) -> dict:
    """In this process: Hugging Face's step on the GPU (`benchmarks/pretrain.huggingface_step`)."""
    from benchmarks.pretrain import huggingface_step, make_batch, timed

    step = huggingface_step(
        preset, make_batch(batch, seq, 30000), device="cuda", compiled=mode == "compile"
    )
    rate = timed(step, warmup=3, seconds=0.0, min_steps=steps) * batch
    return {"preset": preset, "seq": seq, "batch": batch, "mode": mode, "sequences_per_s": rate}


def check(args) -> int:
    """The runs, the most telling first (each row's pretraining without and with buckets, then the
    resume and the fine-tune, then Hugging Face), each within what is left of --budget."""
    args.work.mkdir(parents=True, exist_ok=False)
    env, install_seconds = install(args.kit, args.work)
    rows, failures, first = [], [], None
    shapes = [(p, int(s), max(1, args.batch_tokens // int(s))) for p, s in _rows(args.rows)]
    for preset, seq, batch in shapes:
        step = synthetic_run(args, env, preset, seq, batch)
        if step["rc"] != 0:
            failures.append(
                f"train.py {preset}:{seq}: {step['rc']} {step.get('stderr', '')[-300:]}"
            )
            continue
        for buckets in (0, args.buckets):
            label = f"{preset} s{seq} {'no buckets' if buckets == 0 else 'buckets'}"
            output = args.work / f"{preset}-s{seq}-b{'default' if buckets is None else buckets}"
            data = args.kit / "shards" / f"s{seq}"
            done = pretrain_run(args, env, data, output, preset, args.steps, batch, buckets)
            entry = {"run": label, "batch": batch, **_outcome(done)}
            if done["summary"]:
                entry.update(loop_row(done["summary"], step["summary"]))
            rows.append(entry)
            if not done["ok"]:
                failures.append(f"{label}: {entry}")
            elif first is None:
                export = done["summary"]["export"].get("keras")
                first = (label, data, output, preset, batch, buckets, export)
    if first is not None:
        label, data, output, preset, batch, buckets, export = first
        more = resume_steps(args.steps)
        resumed = pretrain_run(args, env, data, output, preset, more, batch, buckets)
        continued = resumed["ok"] and last_step(output) == more
        rows.append({"run": f"{label}: resume to step {more}", **_outcome(resumed)})
        if not continued:
            failures.append(f"resume of {label}: {_outcome(resumed)}")
        rows.append(finetune_row(args, env, export, failures))
    skipped = huggingface_skipped()
    hf_rows = [{"run": f"{p} s{s} Hugging Face", "batch": b} for p, s, b in shapes]
    modes = ("compile", "eager") if args.hf_eager else ("compile",)  # the goal's peer first
    for mode in () if skipped else modes:
        for row, (preset, seq, batch) in zip(hf_rows, shapes):
            row[mode] = huggingface_run(args, env, preset, seq, batch, mode)
    rows += [{**row, "skipped": skipped} if skipped else row for row in hf_rows]
    for row in rows:  # a Hugging Face run's value is its rate, or its exit code where it failed
        for key in ("rc", "compile", "eager"):
            value = row.get(key)
            if value == "out of budget" or (key != "rc" and isinstance(value, int)):
                failures.append(f"{row['run']}: {key} {value}")
    print_table(rows, install_seconds)
    print(json.dumps({"check": "gpu", "install_s": round(install_seconds, 1), "rows": rows,
                      "failures": failures}))  # fmt: skip
    return 1 if failures else 0


def _rows(rows: str) -> list[tuple[str, str]]:
    return [tuple(row.split(":")) for row in rows.split(",")]


def finetune_row(args, env, export: str | None, failures: list) -> dict:
    if export is None:
        failures.append("no export/model.keras to fine-tune")
        return {"run": "finetune sst2", "rc": "no export"}
    done = timed_run(
        [sys.executable, "-m", "model.finetune", "--task", "sst2", "--init", export]
        + ["--spm-model", str(args.kit / "sp16k.model"), "--data-dir", str(args.kit / "SST-2")]
        + ["--output", str(args.work / "finetune-sst2"), "--train-steps", str(args.finetune_steps)]
        + ["--batch-size", "32", "--max-seq-length", "128"],
        env,
        args,
    )
    if done["rc"] != 0:
        failures.append(f"finetune sst2: {done['rc']} {done['stderr'][-300:]}")
    accuracy = (done["summary"] or {}).get("dev", {}).get("accuracy")
    return {"run": "finetune sst2", **_outcome(done), "dev_accuracy": accuracy}


def _outcome(done: dict) -> dict:
    return {
        "rc": done["rc"],
        "seconds": done["seconds"],
        "exit_after_summary_s": done["exit_after_summary_s"],
    }


COLUMNS = (
    "run", "batch", "rc", "seconds", "exit_after_summary_s", "steady_seq_per_s", "loop_seq_per_s",
    "synthetic_seq_per_s", "steady_over_synthetic", "input_wait_share", "real_token_share",
    "real_token_mfu", "step_compilations", "length_buckets", "dev_accuracy", "eager", "compile",
    "skipped",
)  # fmt: skip


def print_table(rows: list[dict], install_seconds: float) -> None:
    """One Markdown table: a run a line, the columns any row has."""
    columns = [c for c in COLUMNS if any(c in row for row in rows)]
    print(f"kit installed in {install_seconds:.1f} s")
    print("| " + " | ".join(columns) + " |")
    print("|" + "---|" * len(columns))
    for row in rows:
        print("| " + " | ".join(str(row.get(c, "")) for c in columns) + " |")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    kit = commands.add_parser("prepare")
    kit.add_argument("--kit", type=Path, required=True)
    kit.add_argument("--python-version", default="3.12", help="the device's Python")
    kit.add_argument("--max-mib", type=float, default=64.0, help="a device command carries 64 MiB")
    run = commands.add_parser("run")
    run.add_argument("--kit", type=Path, required=True)
    run.add_argument("--work", type=Path, required=True)
    run.add_argument("--rows", default="albert-base:128,albert-large:512")
    run.add_argument("--steps", type=int, default=60)
    run.add_argument("--batch-tokens", type=int, default=32768)
    run.add_argument(
        "--buckets", type=int, default=None, help="the bucket runs' k (default: the trainer's)"
    )
    run.add_argument("--synthetic-steps", type=int, default=10)
    run.add_argument("--finetune-steps", type=int, default=20)
    run.add_argument("--timeout", type=float, default=300.0, help="seconds a command may take")
    run.add_argument(
        "--budget",
        type=float,
        default=560.0,
        help="seconds for the whole check (a device call: 600, the machine's start apart)",
    )
    run.add_argument(
        "--hf-eager",
        action="store_true",
        help="also Hugging Face eager (a reference, not the goal's peer: about 40 s on an H200)",
    )
    run.add_argument(
        "--tiny",
        action="store_true",
        help="CPU settings: albert-nano s128, albert-tiny s512, 12 steps, 4 buckets, 2,048 tokens",
    )
    hf = commands.add_parser("hf")  # one Hugging Face measurement, in a process of its own
    hf.add_argument("--preset", required=True)
    hf.add_argument("--seq", type=int, required=True)
    hf.add_argument("--batch", type=int, required=True)
    hf.add_argument("--mode", choices=("eager", "compile"), required=True)
    hf.add_argument("--steps", type=int, default=10)
    args = parser.parse_args()
    if args.command == "prepare":
        build_kit(args.kit, args.python_version, args.max_mib)
        return 0
    if args.command == "hf":
        print(
            json.dumps(
                measure_huggingface(args.preset, args.seq, args.batch, args.mode, args.steps)
            )
        )
        return 0
    if args.tiny:
        args.rows, args.steps, args.buckets = "albert-nano:128,albert-tiny:512", 12, 4
        args.batch_tokens, args.synthetic_steps, args.finetune_steps = 2048, 3, 4
    problem = kit_problem(args.kit, f"{sys.version_info.major}.{sys.version_info.minor}")
    if problem:  # before installing anything: one line, the fix named
        print(f"check.py run: {problem}", file=sys.stderr)
        return 2
    args.kit, args.work = args.kit.resolve(), args.work.resolve()
    args.deadline = time.perf_counter() + args.budget
    return check(args)


if __name__ == "__main__":
    sys.exit(main())
