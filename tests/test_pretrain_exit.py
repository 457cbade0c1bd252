"""Every run ends: `python -m model.pretrain` on JAX with Grain worker processes and
`--length-buckets` exits within seconds of printing its summary, its input closed by the loop (no
worker process alive once the run returns, no shared memory or semaphore left for the resource
tracker to report, nothing torn down at interpreter shutdown), when it finishes and when it fails.

Each run stops with the workers' prefetch buffers full: the workers prepare a batch in milliseconds,
the steps (a checkpoint every third) take far longer."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
from pretrain_runs import NO_TENSORFLOW, subprocess_env
from pretrain_testdata import cut_short_first_shard, write_shards

ROOT = Path(__file__).resolve().parents[1]

# `python -m model.pretrain` as the GPU kit runs it (no TensorFlow), then the worker processes
# still alive once `main` has returned
RUN = (
    NO_TENSORFLOW
    + """
import json, multiprocessing
from model.pretrain import main

code = main(sys.argv[1:])
alive = [p.name for p in multiprocessing.active_children()]
print(json.dumps({"alive_after_run": alive}), file=sys.stderr)
sys.exit(code)
"""
)


def run_pretrain(tmp_path: Path, env: dict, data: Path, name: str, steps: int) -> dict:
    """Run to its end; rc, seconds from the summary's last line to the exit, stderr."""
    flags = [
        *("--data", str(data), "--output", str(tmp_path / name), "--preset", "albert-nano"),
        *("--steps", str(steps), "--batch-size", "4", "--input-workers", "2"),
        *("--length-buckets", "2", "--shuffle-buffer", "16", "--log-every", "5"),
        *("--checkpoint-every", "3", "--keep-checkpoints", "1", "--eval-every", "0"),
        *("--eval-batches", "1", "--no-progress", "--no-export", "--no-check-data"),
    ]
    process = subprocess.Popen(
        [sys.executable, "-c", RUN, *flags],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    summary_at = None
    try:
        for line in process.stdout:
            if line.rstrip() == "}":  # the summary's last line (indented JSON)
                summary_at = time.monotonic()
        _, stderr = process.communicate(timeout=300)
    finally:
        process.kill()
    return {
        "rc": process.returncode,
        "after_summary_s": time.monotonic() - summary_at if summary_at else None,
        "stderr": stderr,
    }


def left_behind(stderr: str) -> list[str]:
    """What a closed input leaves no trace of: live workers, shared memory or semaphores the
    resource tracker reports, exceptions ignored at interpreter shutdown."""
    alive = json.loads(
        next(line for line in stderr.splitlines() if line.startswith('{"alive_after_run"'))
    )["alive_after_run"]
    return alive + [
        line
        for line in stderr.splitlines()
        if "leaked" in line or line.startswith("Exception ignored")
    ]


@pytest.mark.slow
@pytest.mark.keras
def test_runs_with_buckets_and_workers_exit_and_leave_nothing_behind(keras_backend, tmp_path):
    if keras_backend != "jax":
        pytest.skip(
            "Grain workers and length buckets are the JAX backend's: runs in `make test-jax`"
        )
    # the runs share their compilations (one per bucket length, not one per run)
    env = subprocess_env(KERAS_BACKEND="jax", JAX_PLATFORMS="cpu")
    # 48 training records of 16 to 32 tokens, 2 length buckets: epochs of about 11 batches of 4
    data = write_shards(tmp_path / "records", num_shards=3, per_shard=24, dynamic=True)
    for steps in (1, 16):  # the first step alone (compiling); across an epoch boundary
        done = run_pretrain(tmp_path, env, data, f"run-{steps}", steps)
        assert done["rc"] == 0, done["stderr"][-3000:]
        assert done["after_summary_s"] < 10, (steps, done["after_summary_s"])
        assert left_behind(done["stderr"]) == [], steps

    # A shard that ends inside a record, met by the workers mid-epoch: the run fails (exit 2, one
    # line naming the record) and its input is closed all the same.
    first = cut_short_first_shard(data)
    done = run_pretrain(tmp_path, env, data, "failing", 30)
    assert done["rc"] == 2 and f"{first}: record 24: truncated" in done["stderr"]
    assert left_behind(done["stderr"]) == []
