"""model.pretrain as real processes: two TensorFlow workers on 127.0.0.1 (MultiWorkerMirrored) end
with identical weights, with the masked-LM objective and with ELECTRA's replaced-token detection
(whose generator samples in the step).

A real SIGKILL then an exact resume: tests/test_pretrain_preemption.py (killed mid-write, resumed to
the uninterrupted run's weights) and tests/test_never_lose_work.py (resumed across an epoch's end to
its records). The JAX backend's data parallelism over several CPU devices of one process:
tests/test_pretrain_multiprocess.py (1 process x 4 devices trains as 2 x 2)."""

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from pretrain_testdata import write_shards

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


def _env(**extra):
    env = dict(os.environ, PYTHONPATH=str(REPO), TF_CPP_MIN_LOG_LEVEL="2", **extra)
    env.pop("TF_CONFIG", None)
    return env


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    return str(write_shards(tmp_path_factory.mktemp("records"), num_shards=3, per_shard=32))


def _free_ports(n):
    sockets = [socket.socket() for _ in range(n)]
    for s in sockets:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in sockets]
    for s in sockets:
        s.close()
    return ports


@pytest.mark.slow
@pytest.mark.parametrize("objective", ["mlm", "rtd"])
def test_two_workers_on_localhost_end_with_identical_weights(data, tmp_path, objective):
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
            "--objective",
            objective,
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
