"""`albert run` given SIGTERM during pretraining: the pretrain stage saves a checkpoint at that
step, the task and flow runs end Cancelled, named "Interrupted" (not Failed), the command exits 75
with one line naming the command that resumes; that command then finds the earlier stages cached
and resumes pretraining from the signal's step.

A real process, a real Prefect server (this session's temporary one, tests/conftest.py, which the
command uses instead of starting one) and a real signal (sent by the process to itself when the
training record of step 2 reaches the flow's progress callback: a deterministic point). The
command that resumes runs in this process, as test_flows_line's second night does: what it guards
is the cache and the checkpoint the stopped process left, not a process of its own.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import prefect_server, session_api_url
from test_flows_line import trainer_log
from test_flows_pipeline import tiny_flow_flags, write_corpus

from model.checkpoints import store as checkpointing

REPO = Path(__file__).resolve().parents[1]

# `albert run`, sending itself SIGTERM when the flow's progress callback gets step SIGNAL_AT.
SIGNALS_ITSELF = """
import os, signal, sys
from albert.cli import main
from flows.report import render as report
signal_at, progress = int(sys.argv[1]), report.TrainingProgress.__call__
def progress_and_signal(self, record):
    if record["split"] == "train" and record["step"] == signal_at:
        os.kill(os.getpid(), signal.SIGTERM)
    return progress(self, record)
report.TrainingProgress.__call__ = progress_and_signal
sys.exit(main(sys.argv[2:]))
"""


@pytest.mark.slow
def test_albert_run_given_sigterm_during_pretraining_resumes_through_the_cache(tmp_path, capfd):
    from albert import cli

    run_dir = tmp_path / "run"
    flags = tiny_flow_flags(write_corpus(tmp_path / "corpus.txt"), run_dir)
    env = dict(
        os.environ,
        PYTHONPATH=str(REPO),
        PREFECT_HOME=str(tmp_path / "prefect"),
        PREFECT_API_URL=session_api_url(),
        PREFECT_LOGGING_LEVEL="INFO",  # the flow and task runs' final states
    )
    done = subprocess.run(
        [sys.executable, "-c", SIGNALS_ITSELF, "2", "run", *flags],
        check=False,
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    code, output = done.returncode, done.stdout + done.stderr
    checkpoints = str(run_dir / "pretrain" / "checkpoints")
    assert code == 75, output[-3000:]
    (line,) = [line for line in output.splitlines() if "albert run interrupted:" in line]
    assert (
        f"SIGTERM at step 2: saved {checkpoints}/ckpt-000000002; resume with: albert run " in line
    )
    assert "Finished in state Interrupted('SIGTERM at step 2" in output  # the flow run
    assert "Finished in state Failed" not in output and "Crashed" not in output
    assert [c.step for c in checkpointing.list_checkpoints(checkpoints)] == [2]
    assert not (run_dir / "heldout").exists()

    capfd.readouterr()
    with prefect_server(), trainer_log() as said:
        code = cli.main(["run", *flags])  # the command the line names, in this process
    output = capfd.readouterr().out
    assert code == 0, output[-3000:]
    summary = json.loads(output[: output.index("\n}\n") + 2])  # the command's summary
    cached = [name for name, stage in summary["stages"].items() if stage["cached"]]
    assert sorted(cached) == ["segment", "tfrecords", "vocab"], summary["stages"]
    assert f"resumed from {checkpoints}/ckpt-000000002 (step 2)" in said
    records = [json.loads(line) for line in (run_dir / "pretrain" / "metrics.jsonl").open()]
    assert [r["step"] for r in records if r["split"] == "train"] == [1, 2, 3, 4]
    assert (run_dir / "report.md").is_file()


def test_a_flow_that_returns_interrupted_ends_cancelled_and_its_command_raises_interrupted():
    """The pattern of `flows.domain.flow` (one-off runs and line nights) and `albert run`: the
    flow catches `Interrupted` and returns `tasks.interrupted`; the run ends Cancelled, named
    "Interrupted"; `tasks.resumable_flow_run` raises `Interrupted` again, for exit 75."""
    from prefect import flow

    from albert.errors import Interrupted
    from flows.engine import tasks

    @flow(name="albert-test-interrupted")
    def stopped(config=None):
        try:
            raise Interrupted("SIGTERM at step 3: saved out/checkpoints/ckpt-000000003")
        except Interrupted as stop:
            return tasks.interrupted(stop)

    with prefect_server():
        state = stopped(return_state=True)
        assert state.is_cancelled() and state.name == tasks.INTERRUPTED
        try:
            tasks.resumable_flow_run(stopped, None)
        except Interrupted as again:
            assert "saved out/checkpoints/ckpt-000000003" in str(again)
        else:
            raise AssertionError("resumable_flow_run did not raise Interrupted")
