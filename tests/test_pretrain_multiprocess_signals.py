"""model.pretrain on two JAX processes of two CPU devices each (see tests/multiprocess_runs.py):
SIGTERM to one process stops both at one step with one checkpoint and exit 75; a re-run on one
process of four devices restores that checkpoint and ends as the uninterrupted run.

The stopped run is shared by the tests; the uninterrupted run is `pretrain_runs.reference` (one
process, one device: the same training as 2 x 1 devices, test_pretrain_multiprocess, and so as
2 x 2 and 1 x 4, whose global batch is the same)."""

import shutil

import pretrain_runs
import pytest
from multiprocess_runs import STEPS, assert_same_training, finish, skip_unless_jax, start, succeeded

from model.checkpoints import store as checkpointing

pytestmark = [pytest.mark.keras, pytest.mark.slow]

# Process 1 of the signal test: model.pretrain's command line, sending itself SIGTERM during step
# SIGNAL_AT; before the next step it waits until JAX's preemption service has the current step of
# both processes (the keys its sync protocol writes), so that the step they agree on comes before
# the run's last whatever the machine's speed.
SIGNALS_ITSELF = """
import os, signal, sys, time
from albert.stage import stage_main
from model.runtime.distribute import leave_jax_cluster
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
    skip_unless_jax()


@pytest.fixture(scope="module")
def stopped(tmp_path_factory):
    """Two processes, two devices each, process 1 sent SIGTERM during step 2: (output directory,
    each process's (exit code, stdout, stderr)); never written to."""
    output = tmp_path_factory.mktemp("stopped") / "out"
    second = ("-c", SIGNALS_ITSELF, "2")
    return output, finish(start(tmp_path_factory, output, processes=2, devices=2, second=second))


def _stop_step(stopped) -> int:
    """The step both processes stopped at (each says it in one line)."""
    steps = set()
    for code, _, err in stopped[1]:
        lines = [line for line in err.splitlines() if "interrupted:" in line]
        assert code == 75 and len(lines) == 1, err[-3000:]
        steps.add(int(lines[0].split(" at step ", 1)[1].split(":")[0]))
    (step,) = steps  # the step both agreed on
    return step


def test_sigterm_to_one_process_stops_both_at_one_step_with_one_checkpoint(stopped):
    step = _stop_step(stopped)
    assert 2 <= step < STEPS
    checkpoints = stopped[0] / "checkpoints"
    assert f"at step {step}: saved {checkpoints}" in stopped[1][0][2]
    assert f"at step {step}: process 0 saved the checkpoint" in stopped[1][1][2]
    saved = checkpointing.list_checkpoints(str(checkpoints))
    assert saved[-1].step == step and checkpointing.read_state(saved[-1].path)["step"] == step
    assert not list(checkpoints.glob("*.tmp-*"))


def test_a_rerun_on_one_process_of_four_devices_resumes_as_the_uninterrupted_run(
    stopped, tmp_path, tmp_path_factory
):
    """1 x 4 devices resuming the checkpoint the stopped 2 x 2 run saved ends as the uninterrupted
    run: a checkpoint of 2 processes restores on 1, and 2 x 2 devices train as 1 x 4. (A re-run
    on the same two processes: test_pretrain_multiprocess's kill test.)"""
    step = _stop_step(stopped)
    four = tmp_path / "four"
    name = f"ckpt-{step:09d}"
    shutil.copytree(stopped[0] / "checkpoints" / name, four / "checkpoints" / name)
    shutil.copy(stopped[0] / "metrics.jsonl", four / "metrics.jsonl")
    results = succeeded(start(tmp_path_factory, four, processes=1, devices=4))
    assert [r["replicas"] for r in results] == [4]
    assert_same_training(four, pretrain_runs.reference(tmp_path_factory)[0])
