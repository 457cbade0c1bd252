"""model.pretrain as real processes: SIGKILL mid-run then exact resume, two workers on 127.0.0.1,
and the JAX backend's keras.distribution data parallelism over two (virtual) CPU devices."""

import json
import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from pretrain_testdata import write_shards

from model import checkpointing

REPO = Path(__file__).resolve().parents[1]
TINY = [
    "--preset",
    "albert-nano",
    "--batch-size",
    "8",
    "--learning-rate",
    "0.005",
    "--warmup-steps",
    "2",
    "--eval-batches",
    "2",
    "--no-progress",
    "--no-export",
    "--log-every",
    "1",
]

# Runs model.pretrain and SIGKILLs itself when the training record of step KILL_AT is written.
KILLABLE = """
import json, os, signal, sys
from model.pretrain import PretrainConfig, run
config = PretrainConfig.model_validate_json(sys.argv[1])
kill_at = int(sys.argv[2])
def on_metrics(record):
    if record["split"] == "train" and record["step"] == kill_at:
        os.kill(os.getpid(), signal.SIGKILL)
print("RESULT " + json.dumps(run(config, on_metrics=on_metrics), default=str))
"""


def _env(**extra):
    env = dict(os.environ, PYTHONPATH=str(REPO), TF_CPP_MIN_LOG_LEVEL="2", **extra)
    env.pop("TF_CONFIG", None)
    return env


def _killable(config: dict, kill_at: int, **env) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", KILLABLE, json.dumps(config), str(kill_at)],
        check=False,
        cwd=REPO,
        env=_env(**env),
        capture_output=True,
        text=True,
        timeout=300,
    )


def _result(proc: subprocess.CompletedProcess) -> dict:
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.split("RESULT ", 1)[1])


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    return str(write_shards(tmp_path_factory.mktemp("records"), num_shards=3, per_shard=32))


@pytest.mark.slow
def test_sigkill_then_resume_matches_an_uninterrupted_run(data, tmp_path):
    config = {
        "data": data,
        "preset": "albert-nano",
        "batch_size": 8,
        "learning_rate": 0.005,
        "warmup_steps": 2,
        "steps": 10,
        "log_every": 1,
        "eval_every": 0,
        "checkpoint_every": 4,
        "eval_batches": 2,
        "progress": False,
        "export": False,
        "shuffle_buffer": 16,
        "jit_compile": False,
    }
    reference = _result(_killable(dict(config, output=str(tmp_path / "reference")), kill_at=-1))

    interrupted = dict(config, output=str(tmp_path / "interrupted"))
    killed = _killable(
        interrupted, kill_at=7
    )  # after ckpt-4, before ckpt-8; 8 batches per epoch -> crosses one
    assert killed.returncode == -signal.SIGKILL
    assert [
        c.step
        for c in checkpointing.list_checkpoints(str(tmp_path / "interrupted" / "checkpoints"))
    ] == [4]
    resumed = _result(_killable(interrupted, kill_at=-1))

    assert resumed["steps"] == reference["steps"] == 10
    for split in ("train", "heldout"):
        for name in ("loss", "masked_lm_loss", "sop_loss", "masked_lm_accuracy", "sop_accuracy"):
            assert resumed[split][name] == pytest.approx(
                reference[split][name], rel=1e-4, abs=1e-6
            ), (split, name)
    records = [
        json.loads(line)
        for line in (tmp_path / "interrupted" / "metrics.jsonl").read_text().splitlines()
    ]
    assert [r["step"] for r in records if r["split"] == "train"] == list(range(1, 11))


def _free_ports(n):
    sockets = [socket.socket() for _ in range(n)]
    for s in sockets:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in sockets]
    for s in sockets:
        s.close()
    return ports


@pytest.mark.slow
def test_two_workers_on_localhost_end_with_identical_weights(data, tmp_path):
    workers = [f"127.0.0.1:{port}" for port in _free_ports(2)]
    procs = []
    for index in range(2):
        tf_config = json.dumps(
            {"cluster": {"worker": workers}, "task": {"type": "worker", "index": index}}
        )
        command = [
            sys.executable,
            "-m",
            "model.pretrain",
            "--data",
            data,
            "--output",
            str(tmp_path / f"w{index}"),
            "--steps",
            "3",
            "--no-jit-compile",
            *TINY,
        ]
        procs.append(
            subprocess.Popen(
                command,
                cwd=REPO,
                env=dict(_env(), TF_CONFIG=tf_config),
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
        )
    outputs = []
    try:
        for proc in procs:
            out, err = proc.communicate(timeout=300)
            assert proc.returncode == 0, err[-3000:]
            outputs.append(json.loads(out))
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
    assert [o["replicas"] for o in outputs] == [2, 2]
    assert outputs[0]["weights_sha256"] == outputs[1]["weights_sha256"]
    assert outputs[0]["train"]["loss"] == pytest.approx(outputs[1]["train"]["loss"])
    assert (tmp_path / "w0" / "checkpoints").is_dir() and not (
        tmp_path / "w1" / "checkpoints"
    ).exists()


@pytest.mark.slow
def test_jax_backend_trains_data_parallel_over_two_devices(data, tmp_path):
    pytest.importorskip("jax")
    config = {
        "data": data,
        "preset": "albert-nano",
        "batch_size": 8,
        "learning_rate": 0.005,
        "warmup_steps": 1,
        "steps": 2,
        "log_every": 1,
        "eval_batches": 1,
        "progress": False,
        "export": False,
        "output": str(tmp_path / "jax"),
    }
    result = _result(
        _killable(
            config,
            kill_at=-1,
            KERAS_BACKEND="jax",
            XLA_FLAGS="--xla_force_host_platform_device_count=2",
        )
    )
    assert (result["backend"], result["replicas"], result["steps"]) == ("jax", 2, 2)
    assert result["train"]["loss"] > 0
