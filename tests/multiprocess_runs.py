"""model.pretrain on several JAX processes (jax.distributed, gloo CPU collectives on 127.0.0.1) for
the tests/test_pretrain_multiprocess*.py modules: start them, collect their results, compare their
training. They train `pretrain_runs.SETTINGS` on `pretrain_runs.records` and compile into the
shared JAX compilation cache (a topology's step compiles once in a test process)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pretrain_runs
import pytest
from ports import free_port
from pretrain_runs import SETTINGS, metrics_records

from model.checkpoints import store as checkpointing

REPO = Path(__file__).resolve().parents[1]
STEPS = SETTINGS["steps"]
HEARTBEAT_SECONDS = 5  # a killed process is noticed this soon (the default, 20 s: real hosts)


def skip_unless_jax() -> None:
    import keras

    if keras.config.backend() != "jax":
        pytest.skip("several JAX processes: runs in `make test-jax`")


def environment(devices: int) -> dict[str, str]:
    """A JAX process's environment: `devices` CPU devices."""
    return pretrain_runs.subprocess_env(
        KERAS_BACKEND="jax",
        JAX_PLATFORMS="cpu",
        XLA_FLAGS=f"--xla_force_host_platform_device_count={devices}",
    )


def start(
    tmp_path_factory,
    output,
    processes: int,
    devices: int,
    *,
    first=None,
    second: tuple[str, ...] = (),
    settings: dict | None = None,
) -> list[subprocess.Popen]:
    """`processes` model.pretrain processes with `devices` CPU devices each (process 0 first in
    the list, started last), training `SETTINGS` with `settings` over them. `second`: `python -c`
    code and its arguments that process 1 runs instead of `-m model.pretrain`; `first(others)`:
    the same for process 0, given the other processes (model.pretrain's flags follow them)."""
    from pretrain_testdata import pretrain_argv

    env = environment(devices)
    data = pretrain_runs.records(tmp_path_factory)
    port, argv = free_port(), pretrain_argv(data, output, {**SETTINGS, **(settings or {})})

    def launch(command):
        return subprocess.Popen(
            [sys.executable, *command],
            cwd=REPO,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )

    if processes == 1:
        return [launch(["-m", "model.pretrain", *argv])]

    def command(index, code):
        cluster = ["--coordinator", f"127.0.0.1:{port}", "--num-processes", str(processes)]
        cluster += ["--heartbeat-timeout", str(HEARTBEAT_SECONDS)]
        return [*(code or ("-m", "model.pretrain")), *argv, *cluster, "--process-id", str(index)]

    others = [launch(command(i, second if i == 1 else None)) for i in range(1, processes)]
    return [launch(command(0, first and first(others))), *others]


def finish(procs: list[subprocess.Popen]) -> list[tuple[int, str, str]]:
    """(exit code, stdout, stderr) of each process, once all have ended."""
    try:
        outputs = [proc.communicate(timeout=400) for proc in procs]
        return [(proc.returncode, out, err) for proc, (out, err) in zip(procs, outputs)]
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()


def succeeded(procs: list[subprocess.Popen]) -> list[dict]:
    """Each process's summary; each must exit 0."""
    results = []
    for code, out, err in finish(procs):
        assert code == 0, err[-3000:]
        results.append(
            json.loads(out[out.index("{") :])
        )  # after gloo's "[Gloo] Rank 0 is connected" line
    return results


def weights(output, steps: int = STEPS) -> dict[str, np.ndarray]:
    newest = checkpointing.latest_checkpoint(str(Path(output, "checkpoints")))
    assert newest.step == steps
    with np.load(Path(newest.path, "weights.npz")) as arrays:
        return {name: arrays[name] for name in arrays.files if name.startswith("model/")}


def assert_same_training(output, reference, steps: int = STEPS) -> None:
    """Same weights after `steps` and metrics.jsonl records, to float tolerance (the devices'
    sums reorder)."""
    ours, theirs = weights(output, steps), weights(reference, steps)
    assert sorted(ours) == sorted(theirs)
    for name in ours:
        np.testing.assert_allclose(ours[name], theirs[name], rtol=1e-4, atol=1e-5, err_msg=name)
    records, expected = metrics_records(output), metrics_records(reference)
    assert [(r["step"], r["split"]) for r in records] == [(r["step"], r["split"]) for r in expected]
    for record, wanted in zip(records, expected):
        numbers = {name: value for name, value in wanted.items() if name != "split"}
        assert {name: record[name] for name in numbers} == pytest.approx(
            numbers, rel=1e-4, abs=1e-6
        ), record
