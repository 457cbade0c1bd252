"""model.pretrain on several JAX processes (jax.distributed, gloo CPU collectives on 127.0.0.1): the
same training as one process, a killed process stops the other in bounded time with one line and a
re-run resumes, SIGTERM to one process stops both at one step with one checkpoint and exit 75 and a
re-run resumes, and 2 processes x 2 devices train as 1 process x 4 devices.

One module so that one xdist worker runs it: the one-process baseline (in this process) and the
uninterrupted two-process run are shared by the tests. 6 steps of albert-nano, a checkpoint every 2.
"""

import json
import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from pretrain_testdata import pretrain_argv, write_shards
from test_flows_pipeline import tiny_flow_flags, write_corpus

from model import checkpointing

pytestmark = [pytest.mark.keras, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[1]
STEPS = 6
SETTINGS = {
    "preset": "albert-nano",
    "batch_size": 8,
    "learning_rate": 0.005,
    "warmup_steps": 2,
    "steps": STEPS,
    "log_every": 1,
    "eval_every": 0,
    "checkpoint_every": 2,
    "eval_batches": 2,
    "progress": False,
    "export": False,
    "shuffle_buffer": 16,
}
THROUGHPUT = ("steps_per_second", "sequences_per_second")

# Process 0 of the kill test: model.pretrain's command line, SIGKILLing process PEER_PID when the
# training record of step KILL_AT is written (after ckpt-2, before ckpt-4).
KILLS_PEER = """
import functools, os, signal, sys
from albert.stage import stage_main
from model.distribute import leave_jax_cluster
from model.pretrain import PretrainConfig, run
peer, kill_at = int(sys.argv[1]), int(sys.argv[2])
def on_metrics(record):
    if record["split"] == "train" and record["step"] == kill_at:
        os.kill(peer, signal.SIGKILL)
sys.exit(leave_jax_cluster(stage_main(PretrainConfig, functools.partial(run, on_metrics=on_metrics),
                                      sys.argv[3:], prog="model.pretrain", description="")))
"""


# Process 1 of the signal test: model.pretrain's command line, sending itself SIGTERM during step
# SIGNAL_AT; before the next step it waits until JAX's preemption service has the current step of
# both processes (the keys its sync protocol writes), so that the step they agree on comes before
# the run's last whatever the machine's speed.
SIGNALS_ITSELF = """
import os, signal, sys, time
from albert.stage import stage_main
from model.distribute import leave_jax_cluster
from model.pretrain import PretrainConfig, run
from model.pretrain.trainer import Trainer
signal_at = int(sys.argv[1])
train_step = Trainer.train_step
def step_and_signal(trainer, batch):
    if trainer.step == signal_at - 1:
        os.kill(os.getpid(), signal.SIGTERM)
    last = train_step(trainer, batch)
    if trainer.step == signal_at:
        from jax._src import distributed
        client, deadline = distributed.global_state.client, time.monotonic() + 60
        while time.monotonic() < deadline:
            if len(client.key_value_dir_get("PREEMPTION_CURRENT_COUNTER/")) == 2:
                break
            time.sleep(0.05)
    return last
Trainer.train_step = step_and_signal
sys.exit(leave_jax_cluster(stage_main(PretrainConfig, run, sys.argv[2:], prog="model.pretrain",
                                      description="")))
"""


@pytest.fixture(autouse=True, scope="module")
def _jax_only():
    import keras

    if keras.config.backend() != "jax":
        pytest.skip("several JAX processes: runs in `make test-jax`")


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _argv(data, output) -> list[str]:
    return pretrain_argv(data, output, SETTINGS)


def _environment(devices: int, compile_cache: Path) -> dict[str, str]:
    return dict(
        os.environ,
        PYTHONPATH=str(REPO),
        KERAS_BACKEND="jax",
        JAX_PLATFORMS="cpu",
        TF_CPP_MIN_LOG_LEVEL="2",
        XLA_FLAGS=f"--xla_force_host_platform_device_count={devices}",
        JAX_COMPILATION_CACHE_DIR=str(compile_cache),
    )


def _start(
    data,
    output,
    processes: int,
    devices: int,
    peer_killer_at: int | None = None,
    signal_at: int | None = None,
) -> list[subprocess.Popen]:
    """`processes` model.pretrain processes with `devices` CPU devices each (process 0 first);
    they share JAX's compilation cache: a topology's training step compiles once in the module."""
    env = _environment(devices, data.parent / "multiprocess-jax-cache")
    port, argv = _free_port(), _argv(data, output)

    def start(command):
        return subprocess.Popen(
            [sys.executable, *command],
            cwd=REPO,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )

    if processes == 1:
        return [start(["-m", "model.pretrain", *argv])]

    def cluster(index):
        return [
            "--coordinator",
            f"127.0.0.1:{port}",
            "--num-processes",
            str(processes),
            "--process-id",
            str(index),
        ]

    def other(index):
        if index == 1 and signal_at is not None:  # process 1 sends itself SIGTERM
            return start(["-c", SIGNALS_ITSELF, str(signal_at), *argv, *cluster(index)])
        return start(["-m", "model.pretrain", *argv, *cluster(index)])

    others = [other(i) for i in range(1, processes)]
    if peer_killer_at is None:
        first = start(["-m", "model.pretrain", *argv, *cluster(0)])
    else:
        first = start(
            ["-c", KILLS_PEER, str(others[0].pid), str(peer_killer_at), *argv, *cluster(0)]
        )
    return [first, *others]


def _finish(procs: list[subprocess.Popen]) -> list[tuple[int, str, str]]:
    """(exit code, stdout, stderr) of each process, once all have ended."""
    try:
        outputs = [proc.communicate(timeout=400) for proc in procs]
        return [(proc.returncode, out, err) for proc, (out, err) in zip(procs, outputs)]
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()


def _succeeded(procs: list[subprocess.Popen]) -> list[dict]:
    results = []
    for code, out, err in _finish(procs):
        assert code == 0, err[-3000:]
        results.append(
            json.loads(out[out.index("{") :])
        )  # after gloo's "[Gloo] Rank 0 is connected" line
    return results


def _weights(output) -> dict[str, np.ndarray]:
    newest = checkpointing.latest_checkpoint(str(Path(output, "checkpoints")))
    assert newest.step == STEPS
    with np.load(Path(newest.path, "weights.npz")) as arrays:
        return {name: arrays[name] for name in arrays.files if name.startswith("model/")}


def _records(output) -> list[dict]:
    lines = Path(output, "metrics.jsonl").read_text().splitlines()
    return [{k: v for k, v in json.loads(line).items() if k not in THROUGHPUT} for line in lines]


def _assert_same_training(output, reference) -> None:
    """Same weights and metrics.jsonl records, to float tolerance (the devices' sums reorder)."""
    ours, theirs = _weights(output), _weights(reference)
    assert sorted(ours) == sorted(theirs)
    for name in ours:
        np.testing.assert_allclose(ours[name], theirs[name], rtol=1e-4, atol=1e-5, err_msg=name)
    records, expected = _records(output), _records(reference)
    assert [(r["step"], r["split"]) for r in records] == [(r["step"], r["split"]) for r in expected]
    for record, wanted in zip(records, expected):
        numbers = {name: value for name, value in wanted.items() if name != "split"}
        assert {name: record[name] for name in numbers} == pytest.approx(
            numbers, rel=1e-4, abs=1e-6
        ), record


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    return write_shards(tmp_path_factory.mktemp("records"), num_shards=3, per_shard=32)


@pytest.fixture(scope="module")
def single(data, tmp_path_factory):
    """One process, one device, in this process: the output directory."""
    from model.pretrain import PretrainConfig, run

    output = tmp_path_factory.mktemp("single") / "out"
    run(PretrainConfig(data=str(data), output=str(output), **SETTINGS))
    return output


@pytest.fixture(scope="module")
def pair(data, tmp_path_factory):
    """Two processes, one device each, uninterrupted: (output directory, both results)."""
    output = tmp_path_factory.mktemp("pair") / "out"
    started = time.perf_counter()
    results = _succeeded(_start(data, output, processes=2, devices=1))
    print(f"two processes x 1 device, {STEPS} steps: {time.perf_counter() - started:.1f} s")
    return output, results


def test_two_processes_train_as_one(single, pair):
    output, results = pair
    _assert_same_training(output, single)
    assert [r["replicas"] for r in results] == [2, 2]
    assert results[0]["weights_sha256"] == results[1]["weights_sha256"]
    # only process 0 wrote: one TensorBoard file (its name has the writer's pid), no paths from 1
    assert len(list(Path(output, "tensorboard").rglob("*tfevents*"))) == 1
    assert (
        results[0]["checkpoint"]
        and results[1]["checkpoint"] is None
        and results[1]["metrics"] is None
    )


def test_a_killed_process_stops_the_other_and_a_rerun_resumes(data, pair, tmp_path):
    output = tmp_path / "out"
    first, second = _start(data, output, processes=2, devices=1, peer_killer_at=3)
    second.wait(timeout=400)
    killed_at = time.perf_counter()
    ((code, _, err),) = _finish([first])
    stopped_after = time.perf_counter() - killed_at
    print(f"the survivor stopped {stopped_after:.1f} s after its peer was killed")
    assert second.returncode == -9
    assert code != 0 and stopped_after < 60
    errors = [line for line in err.splitlines() if " ERROR " in line or "failed:" in line]
    assert len(errors) == 1 and "process 1 of the 2 stopped" in errors[0], err[-3000:]
    assert [c.step for c in checkpointing.list_checkpoints(str(output / "checkpoints"))] == [2]

    resumed = _succeeded(_start(data, output, processes=2, devices=1))
    assert resumed[0]["weights_sha256"] == pair[1][0]["weights_sha256"]
    assert _records(output) == _records(pair[0])


def test_sigterm_to_one_process_stops_both_at_one_step_and_a_rerun_resumes(data, pair, tmp_path):
    output = tmp_path / "out"
    stopped = _finish(_start(data, output, processes=2, devices=1, signal_at=2))
    steps = set()
    for code, _, err in stopped:
        lines = [line for line in err.splitlines() if "interrupted:" in line]
        assert code == 75 and len(lines) == 1, err[-3000:]
        steps.add(int(lines[0].split(" at step ", 1)[1].split(":")[0]))
    (step,) = steps  # the step both agreed on
    assert 2 <= step < STEPS
    assert f"at step {step}: saved {output / 'checkpoints'}" in stopped[0][2]
    assert f"at step {step}: process 0 saved the checkpoint" in stopped[1][2]
    saved = checkpointing.list_checkpoints(str(output / "checkpoints"))
    assert saved[-1].step == step and checkpointing.read_state(saved[-1].path)["step"] == step
    assert not list((output / "checkpoints").glob("*.tmp-*"))

    resumed = _succeeded(_start(data, output, processes=2, devices=1))
    assert resumed[0]["weights_sha256"] == pair[1][0]["weights_sha256"]
    assert _records(output) == _records(pair[0])


def test_two_processes_of_two_devices_train_as_one_of_four(data, pair, tmp_path):
    """2 x 2 devices from scratch vs 1 x 4 devices resuming the two-process run's ckpt-2: the same
    training (so a checkpoint of 2 processes also restores on 1)."""
    four = tmp_path / "four"
    (four / "checkpoints").mkdir(parents=True)
    shutil.copytree(
        pair[0] / "checkpoints" / "ckpt-000000002", four / "checkpoints" / "ckpt-000000002"
    )
    shutil.copy(pair[0] / "metrics.jsonl", four / "metrics.jsonl")
    mixed = _start(data, tmp_path / "mixed", processes=2, devices=2) + _start(
        data, four, processes=1, devices=4
    )
    results = _succeeded(mixed)
    assert [r["replicas"] for r in results] == [4, 4, 4]
    _assert_same_training(tmp_path / "mixed", four)


def test_a_flow_on_two_hosts_prepares_the_data_once_and_trains_on_both(tmp_path):
    """`albert run` on two hosts: process 1 waits for process 0's TFRecords and joins the training
    only; process 0 runs the flow (data stages, pretrain, held-out, report) and writes alone."""
    run_dir = tmp_path / "run"
    flags = [
        *tiny_flow_flags(write_corpus(tmp_path / "corpus.txt"), run_dir),
        "--coordinator",
        f"127.0.0.1:{_free_port()}",
        "--num-processes",
        "2",
    ]
    env = _environment(1, tmp_path / "jax-cache")
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "flows.pipeline.flow", *flags, "--process-id", str(index)],
            cwd=REPO,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for index in (1, 0)
    ]
    (code_1, out_1, err_1), (code_0, out_0, err_0) = _finish(procs)
    assert code_0 == 0, err_0[-3000:]
    assert code_1 == 0, err_1[-3000:]
    assert "process 1: joining the pretrain stage" in out_1 and "report:" not in out_1
    assert "report:" in out_0 and (run_dir / "report.md").is_file()
    records = [json.loads(line) for line in (run_dir / "pretrain" / "metrics.jsonl").open()]
    assert [r["step"] for r in records if r["split"] == "train"] == [1, 2, 3, 4]  # one writer
    assert len(list((run_dir / "pretrain" / "tensorboard").rglob("*tfevents*"))) == 1
