"""model.pretrain on two JAX processes (see tests/multiprocess_runs.py): a killed process stops the
other in bounded time with one line, and a re-run on the two processes resumes and ends as the
uninterrupted one-process run (`pretrain_runs.reference`, in this process): two processes train as
one, and only process 0 writes; ELECTRA's replaced-token detection on two processes trains as on
one (its generator samples the same replacements wherever the rows are). SIGTERM and 2 x 2
devices: test_pretrain_multiprocess_signals;
`albert run` on two hosts: test_pretrain_multiprocess_flow."""

import time
from pathlib import Path

import pretrain_runs
import pytest
from multiprocess_runs import assert_same_training, finish, skip_unless_jax, start, succeeded

from model.checkpoints import store as checkpointing

pytestmark = [pytest.mark.keras, pytest.mark.slow]

# Process 0 of the kill test: model.pretrain's command line, SIGKILLing process PEER_PID when the
# training record of step KILL_AT is written (after ckpt-2, before ckpt-4).
KILLS_PEER = """
import functools, os, signal, sys
from albert.stage import stage_main
from model.runtime.distribute import leave_jax_cluster
from model.pretrain import PretrainConfig, run
peer, kill_at = int(sys.argv[1]), int(sys.argv[2])
def on_metrics(record):
    if record["split"] == "train" and record["step"] == kill_at:
        os.kill(peer, signal.SIGKILL)
sys.exit(leave_jax_cluster(stage_main(PretrainConfig, functools.partial(run, on_metrics=on_metrics),
                                      sys.argv[3:], prog="model.pretrain", description="")))
"""


@pytest.fixture(autouse=True, scope="module")
def _jax_only():
    skip_unless_jax()


def tensorboard_files(output: Path) -> list[Path]:
    return list(Path(output, "tensorboard").rglob("*tfevents*"))


def test_a_killed_process_stops_the_other_and_a_rerun_trains_as_one_process(
    tmp_path, tmp_path_factory
):
    output = tmp_path / "out"
    first, second = start(
        tmp_path_factory,
        output,
        processes=2,
        devices=1,
        first=lambda others: ("-c", KILLS_PEER, str(others[0].pid), "3"),
    )
    second.wait(timeout=400)
    killed_at = time.perf_counter()
    ((code, _, err),) = finish([first])
    stopped_after = time.perf_counter() - killed_at
    assert second.returncode == -9
    assert code != 0 and stopped_after < 60
    errors = [line for line in err.splitlines() if " ERROR " in line or "failed:" in line]
    assert len(errors) == 1 and "process 1 of the 2 stopped" in errors[0], err[-3000:]
    assert [c.step for c in checkpointing.list_checkpoints(str(output / "checkpoints"))] == [2]

    written = tensorboard_files(output)
    resumed = succeeded(start(tmp_path_factory, output, processes=2, devices=1))
    assert_same_training(output, pretrain_runs.reference(tmp_path_factory)[0])
    assert [r["replicas"] for r in resumed] == [2, 2]
    assert resumed[0]["weights_sha256"] == resumed[1]["weights_sha256"]
    # only process 0 wrote: one TensorBoard file more (its name has the writer's pid), no paths
    # from process 1
    assert len(tensorboard_files(output)) == len(written) + 1
    assert resumed[0]["checkpoint"] and resumed[1]["checkpoint"] is None
    assert resumed[1]["metrics"] is None


def test_replaced_token_detection_on_two_processes_trains_as_one(tmp_path, tmp_path_factory):
    from model.pretrain import run

    rtd = {
        "objective": "rtd",
        "steps": 2,
        "checkpoint_every": 2,
        "eval_every": 0,
        "jit_compile": True,
    }
    reference = tmp_path / "one"
    run(pretrain_runs.config(pretrain_runs.records(tmp_path_factory), reference, **rtd))
    output = tmp_path / "two"
    results = succeeded(start(tmp_path_factory, output, processes=2, devices=1, settings=rtd))
    assert [r["replicas"] for r in results] == [2, 2]
    assert_same_training(output, reference, steps=2)
