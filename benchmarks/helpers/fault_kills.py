"""The kill and two-writer faults of benchmarks/faults.py: run a stage command, SIGKILL it at a
random moment, check what is visible, re-run it, compare with the uninterrupted run."""

from __future__ import annotations

import hashlib
import json
import os
import random
import signal
import subprocess
import time
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parents[2]
TIMING = ("steps_per_second", "sequences_per_second")
ENV = {**os.environ, "PYTHONPATH": str(ROOT), "TF_CPP_MIN_LOG_LEVEL": "3"}


def _comparable(data: bytes, output: Path, name: str) -> bytes:
    """A file's bytes with the output's own path written as OUTPUT and, in JSON stats, the timings
    (`*seconds*`) left out: they differ between the reference and a fault run by nature."""
    data = data.replace(str(output).encode(), b"OUTPUT")
    if not name.endswith(".json"):
        return data

    def strip(value):
        if isinstance(value, dict):
            return {k: strip(v) for k, v in value.items() if "seconds" not in k}
        return [strip(v) for v in value] if isinstance(value, list) else value

    return json.dumps(strip(json.loads(data)), sort_keys=True).encode()


def tree(path: Path) -> dict[str, str]:
    """relative file name -> sha256 of its comparable bytes (everything else byte for byte)."""
    if not path.exists():
        return {}
    return {
        p.relative_to(path).as_posix(): hashlib.sha256(
            _comparable(p.read_bytes(), path, p.name)
        ).hexdigest()
        for p in sorted(path.rglob("*"))
        if p.is_file()
    }


def tree_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) if path.exists() else 0


def leftovers(parent: Path) -> list[str]:
    return sorted(
        str(p.relative_to(parent))
        for p in parent.rglob("*")
        if ".tmp-" in p.name or ".old-" in p.name or p.name.endswith(".lock")
    )


def descendants_alive(pids: set[int]) -> list[int]:
    return [
        pid
        for pid in pids
        if psutil.pid_exists(pid) and psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    ]


def start(command: list[str]) -> subprocess.Popen:
    return subprocess.Popen(
        command, env=ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


def run(command: list[str]) -> tuple[float, dict]:
    begin = time.monotonic()
    process = subprocess.run(command, check=False, env=ENV, capture_output=True, text=True)
    if process.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed: {process.stderr[-2000:]}")
    out = process.stdout
    summary = json.loads(out[out.index("{") :]) if "{" in out else {}
    return time.monotonic() - begin, summary


def records(path: Path) -> list[dict]:
    if not path.exists():
        return []
    return [
        {k: v for k, v in json.loads(line).items() if k not in TIMING}
        for line in path.read_text().splitlines()
    ]


def checkpoint_steps(pretrain: Path) -> list[int]:
    return sorted(
        int(p.name.split("-")[1])
        for p in (pretrain / "checkpoints").glob("ckpt-*")
        if p.name[5:].isdigit()
    )


def kill_scenario(
    name: str, command: list[str], output: Path, reference: dict, seconds: float, rng: random.Random
) -> dict:
    """Kill `command` at a random moment, check what is visible, re-run, compare with the
    reference."""
    finished_before = tree(output) if name != "pretrain" else {}
    ckpts_before = checkpoint_steps(output) if name == "pretrain" else []
    delay = rng.uniform(0.2, 1.0) * seconds
    process = start(command)
    seen: set[int] = set()
    deadline = time.monotonic() + delay
    while time.monotonic() < deadline and process.poll() is None:
        try:
            seen.update(c.pid for c in psutil.Process(process.pid).children(recursive=True))
        except psutil.NoSuchProcess:
            break
        time.sleep(0.2)
    killed = process.poll() is None
    if killed:
        os.kill(process.pid, signal.SIGKILL)
    process.wait()
    checks: dict[str, bool] = {}
    lost = 0
    if name == "pretrain":
        ckpts_after_kill = checkpoint_steps(output)
        lost += sum(
            tree_bytes(output / "checkpoints" / f"ckpt-{s:09d}")
            for s in ckpts_before
            if s > max(ckpts_after_kill or [0])
        )
    else:
        visible = tree(output)
        checks["no_partial_output"] = visible in ({}, reference["tree"], finished_before)
    time.sleep(2.0)  # the watchdog's grace to stop what the killed command started
    watchdogs = [
        p.pid
        for p in psutil.process_iter(["cmdline"])
        if p.info["cmdline"]
        and "albert.reaper" in " ".join(p.info["cmdline"])
        and str(process.pid) in p.info["cmdline"]
    ]
    deadline = time.monotonic() + 15
    while watchdogs and descendants_alive(set(watchdogs)) and time.monotonic() < deadline:
        time.sleep(0.5)
    checks["no_process_left"] = not descendants_alive(seen)
    _, summary = run(command)
    if name == "pretrain":
        checks["same_weights"] = summary.get("weights_sha256") == reference["weights"]
        checks["same_records"] = records(output / "metrics.jsonl") == reference["records"]
        ckpts_after = checkpoint_steps(output)
        lost += sum(
            tree_bytes(output / "checkpoints" / f"ckpt-{s:09d}")
            for s in ckpts_before
            if s > max(ckpts_after or [0])
        )
    else:
        checks["identical_output"] = tree(output) == reference["tree"]
    left = leftovers(output.parent)
    checks["no_leftovers"] = not left
    return {
        "stage": name,
        "killed_after_s": round(delay, 1),
        "killed": killed,
        "checks": checks,
        "survived": all(checks.values()),
        "bytes_lost": lost,
        "leftovers": left,
        "processes_left": descendants_alive(seen),
    }


def two_writers(commands: dict, work: Path, reference: dict) -> dict:
    """Two pretraining runs on one output at once: one fails at once naming the other; nothing
    corrupted."""
    output = work / "two" / "pretrain"
    command = [
        c if c != str(work / "faults" / "pretrain") else str(output) for c in commands["pretrain"]
    ]
    first, second = start(command), start(command)
    results = [(p.wait(), p.stderr.read()) for p in (first, second)]
    codes = sorted(code for code, _ in results)
    busy = [err for code, err in results if code != 0]
    checks = {
        "one_ran_one_refused": codes == [0, 2] and "being written by another run" in busy[0],
        "same_weights_and_records": records(output / "metrics.jsonl") == reference["records"],
        "no_leftovers": not leftovers(output.parent),
    }
    return {
        "stage": "two_writers",
        "checks": checks,
        "survived": all(checks.values()),
        "bytes_lost": 0,
    }
