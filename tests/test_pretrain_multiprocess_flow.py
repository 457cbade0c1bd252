"""`albert run` on two hosts (two JAX processes on 127.0.0.1): process 1 waits for process 0's
TFRecords and joins the training only; process 0 runs the flow (data stages, pretrain, held-out,
report) and writes alone. Both talk to the session's Prefect server (tests/conftest.py), not to a
temporary one of process 0's own."""

import json
import subprocess
import sys

import pytest
from conftest import session_api_url
from multiprocess_runs import REPO, environment, finish, skip_unless_jax
from ports import free_port
from test_flows_pipeline import tiny_flow_flags, write_corpus

pytestmark = [pytest.mark.keras, pytest.mark.slow]


def test_a_flow_on_two_hosts_prepares_the_data_once_and_trains_on_both(tmp_path):
    skip_unless_jax()
    run_dir = tmp_path / "run"
    flags = [
        *tiny_flow_flags(write_corpus(tmp_path / "corpus.txt"), run_dir),
        "--coordinator",
        f"127.0.0.1:{free_port()}",
        "--num-processes",
        "2",
    ]
    env = {**environment(devices=1), "PREFECT_API_URL": session_api_url()}
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
    (code_1, out_1, err_1), (code_0, out_0, err_0) = finish(procs)
    assert code_0 == 0, err_0[-3000:]
    assert code_1 == 0, err_1[-3000:]
    assert "process 1: joining the pretrain stage" in out_1 and "report:" not in out_1
    assert "report:" in out_0 and (run_dir / "report.md").is_file()
    records = [json.loads(line) for line in (run_dir / "pretrain" / "metrics.jsonl").open()]
    assert [r["step"] for r in records if r["split"] == "train"] == [1, 2, 3, 4]  # one writer
    assert len(list((run_dir / "pretrain" / "tensorboard").rglob("*tfevents*"))) == 1
