"""The runs `check.py` makes, each in a process of its own on the installed kit: under a timeout
(`timed_run`: a hang is killed with its workers and reported), the trainer's (`pretrain_run`, its
exit after its summary checked), the synthetic step's, Hugging Face's (`check.py hf` in a process
of its own), the fine-tune's; and the layouts of each row's pretraining runs."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from benchmarks.gpu.trainer import pretrain_flags, summary_of

HERE = Path(__file__).resolve().parent
EXIT_AFTER_SUMMARY_S = 10.0  # a run that has printed its summary exits within this
PACKING_PROBE = (
    "from model.pretrain.config import PretrainConfig as C; print('packing' in C.model_fields)"
)


def timed_run(command: list[str], env: dict, args) -> dict:
    """Run `command` in its own process group under --timeout (then killed with its workers: a
    hang) or what is left of --budget (then: out of budget); its exit code, seconds, seconds from
    its summary's last line to its exit, the summary (a JSON object on stdout), the tails of
    stdout and stderr."""
    start = time.perf_counter()
    timeout = min(args.timeout, args.deadline - start)
    if timeout < 5:
        return {"rc": "out of budget", "seconds": 0, "exit_after_summary_s": None, "summary": None,
                "stdout": "", "stderr": ""}  # fmt: skip
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
    summary = _summary(text) if not hung else None
    return {
        "rc": ("hung" if timeout == args.timeout else "out of budget")
        if hung
        else process.returncode,
        "seconds": round(end - start, 1),
        "exit_after_summary_s": round(end - summary_at[0], 2) if summary_at else None,
        "summary": summary,
        "stdout": text[-20000:],
        "stderr": "".join(errors)[-2000:],
    }


def _summary(text: str) -> dict | None:
    """The JSON object stdout ends with (`trainer.summary_of`); None where it holds none (or
    several lines of JSON: `op_profile.py`'s)."""
    try:
        return summary_of(text) if "{" in text else None
    except ValueError:
        return None


def _read(stream, lines: list, summary_at: list) -> None:
    for line in stream:
        lines.append(line)
        if line.rstrip() == "}" or line.startswith("{") and line.rstrip().endswith("}"):
            summary_at[:] = [time.perf_counter()]


def pretrain_run(
    args, env, data: Path, output: Path, preset: str, steps: int, batch: int, buckets, more=()
):
    flags = pretrain_flags(
        data, output, preset, steps, batch, None, buckets, args.kit / "sp16k.model"
    )
    done = timed_run([sys.executable, "-m", "model.pretrain", *flags, *more], env, args)
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
        [sys.executable, "-m", "benchmarks.gpu.check", "hf", "--preset", preset, "--seq", str(seq)]
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


def packs(env: dict) -> bool:
    """Does the installed trainer take `--packing on|off` (then each row runs packed too)? Asked
    once, in the kit's environment."""
    probe = subprocess.run(
        [sys.executable, "-c", PACKING_PROBE], env=env, capture_output=True, text=True, check=False
    )
    return probe.stdout.strip() == "True"


def layouts(args, packing: bool) -> list[tuple[str, int, list[str]]]:
    """(name, --length-buckets, more flags) of each row's runs: plain, length buckets and, where the
    trainer packs, packed (--packing-instances as --packing-instances says, else the trainer's)."""
    off = ["--packing", "off"] if packing else []
    runs = [("plain", 0, off), ("buckets", args.buckets, off)]
    if not packing:
        return runs
    k = args.packing_instances
    instances = ["--packing-instances", str(k)] if k else []
    return runs + [("packed", 0, ["--packing", "on", *instances])]


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
    return {"run": "finetune sst2", **outcome(done), "dev_accuracy": accuracy}


def outcome(done: dict) -> dict:
    return {
        "rc": done["rc"],
        "seconds": done["seconds"],
        "exit_after_summary_s": done["exit_after_summary_s"],
    }
