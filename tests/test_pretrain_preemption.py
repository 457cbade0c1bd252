"""SIGTERM is a checkpoint, not a loss (model.runtime.preemption), and checkpoints are written off
the training step (model.checkpoints.writer).

One run interrupted at every point in turn (during a step, before the first step, during a save
with a second signal, during an evaluation), each re-run resuming where the last stopped, ends with
the weights and records of one uninterrupted run (`pretrain_runs.reference`); under --time-budget
the saved state carries the training time; a run SIGKILLed while its background writer is half-way
through a checkpoint keeps the previous one and resumes from it. The writer itself: one write in
flight, `keep` prunes only committed checkpoints, a failed write raises in the caller. Signals are
real (os.kill), sent by hooks at deterministic points: no sleeps.
"""

import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pretrain_runs
import pytest
from pretrain_runs import SETTINGS, config, metrics_records

from albert.errors import EXIT_INTERRUPTED, Interrupted
from model.checkpoints import store as checkpointing
from model.checkpoints.writer import CheckpointWriter

REPO = Path(__file__).resolve().parents[1]


def _argv(data, output) -> list[str]:
    from pretrain_testdata import pretrain_argv  # loads TensorFlow: only the Keras tests

    return pretrain_argv(data, output, SETTINGS)


_records = metrics_records


def _checkpoints(output: Path) -> list[int]:
    return [c.step for c in checkpointing.list_checkpoints(str(output / "checkpoints"))]


def _assert_whole(output: Path, step: int) -> None:
    """ckpt-<step> is committed and loadable: every array reads back (zip CRCs), its state says
    its step, and no write of it is left half-done beside it."""
    path = Path(checkpointing.checkpoint_path(str(output / "checkpoints"), step))
    with np.load(path / "weights.npz") as arrays:
        assert all(arrays[name].size >= 0 for name in arrays.files)
        assert any(name.startswith("optimizer/") for name in arrays.files)
    assert checkpointing.read_state(str(path))["step"] == step
    assert not list(path.parent.glob(f"{path.name}.*"))


def _signal(times: int = 1) -> None:
    for _ in range(times):
        os.kill(os.getpid(), signal.SIGTERM)


def _signal_during_the_next_step(trainer, times: int = 1) -> None:
    """SIGTERM while the backend's step computes (once)."""
    step = trainer.engine.step

    def stepping(batch):
        trainer.engine.step = step
        _signal(times)
        return step(batch)

    trainer.engine.step = stepping


@pytest.fixture
def data(tmp_path_factory):
    pytest.importorskip("keras")
    return pretrain_runs.records(tmp_path_factory)


@pytest.fixture
def baseline(tmp_path_factory):
    """The uninterrupted run (shared by the modules): (output directory, summary)."""
    pytest.importorskip("keras")
    return pretrain_runs.reference(tmp_path_factory)


@pytest.mark.slow
@pytest.mark.keras
def test_a_signal_at_any_point_saves_and_the_reruns_end_as_one_uninterrupted_run(
    data, baseline, tmp_path, monkeypatch, capsys
):
    from model.pretrain import loop, main, run
    from model.pretrain.trainer import Trainer

    output, handler = tmp_path / "out", signal.getsignal(signal.SIGTERM)
    train_step, heldout_metrics = Trainer.train_step, Trainer.heldout_metrics
    open_file, restore = checkpointing.open_file, loop.restore

    # 1. During step 1, through the command line: the step finishes, ckpt-1, exit 75, one line.
    def signal_during_step_1(trainer, batch):
        if trainer.step == 0:
            _signal_during_the_next_step(trainer)
        return train_step(trainer, batch)

    with monkeypatch.context() as patch:
        patch.setattr(Trainer, "train_step", signal_during_step_1)
        code = main(_argv(data, output))
    assert code == EXIT_INTERRUPTED and _checkpoints(output) == [1]
    _assert_whole(output, 1)
    (line,) = [line for line in capsys.readouterr().err.splitlines() if "interrupted" in line]
    assert f"SIGTERM at step 1: saved {output}/checkpoints/ckpt-000000001; resume with: " in line
    assert line.endswith(" ".join(["python", "-m", "model.pretrain", *_argv(data, output)]))

    # 2. Before the first step (here: while the checkpoint is being found): nothing changes.
    def signal_before_restoring(*args):
        _signal()
        return restore(*args)

    before = sorted((p.name, p.stat().st_size) for p in (output / "checkpoints").rglob("*"))
    with monkeypatch.context() as patch, pytest.raises(Interrupted, match="before the first step"):
        patch.setattr(loop, "restore", signal_before_restoring)
        run(config(data, output))
    assert sorted((p.name, p.stat().st_size) for p in (output / "checkpoints").rglob("*")) == before

    # 3. While ckpt-2 is being written in the background (held half-way: its folder made, its
    # weights not yet written), twice, and once more during the stop's own save: the run stops
    # after step 3 with both checkpoints whole.
    writing, release = threading.Event(), threading.Event()

    def opening(path, mode="r", **kwargs):  # in the writer thread
        if "weights.npz" in path and "ckpt-000000002.tmp-" in path:
            writing.set()
            assert release.wait(60)
        if "weights.npz" in path and "ckpt-000000003.tmp-" in path:
            _signal()  # a second signal, during the save of the stop
        return open_file(path, mode, **kwargs)

    def signal_while_writing(trainer, batch):
        if trainer.step == 2:
            assert writing.wait(60)
            _signal_during_the_next_step(trainer, times=2)
            release.set()
        return train_step(trainer, batch)

    with monkeypatch.context() as patch, pytest.raises(Interrupted, match="at step 3: saved"):
        patch.setattr(checkpointing, "open_file", opening)
        patch.setattr(Trainer, "train_step", signal_while_writing)
        run(config(data, output))
    assert _checkpoints(output) == [1, 2, 3]
    for step in (2, 3):
        _assert_whole(output, step)

    # 4. During the evaluation of step 4: it completes, its record counts, ckpt-4 is the stop's.
    def signal_during_evaluation(trainer):
        _signal()
        return heldout_metrics(trainer)

    with monkeypatch.context() as patch, pytest.raises(Interrupted, match="at step 4: saved"):
        patch.setattr(Trainer, "heldout_metrics", signal_during_evaluation)
        run(config(data, output))
    assert _checkpoints(output) == [2, 3, 4]  # keep=3: pruned after the commit
    _assert_whole(output, 4)
    assert [(r["step"], r["split"]) for r in _records(output)][-2:] == [
        (4, "train"),
        (4, "heldout"),
    ]

    # 5. The re-run ends where the uninterrupted run ended.
    resumed = run(config(data, output))
    assert resumed["weights_sha256"] == baseline[1]["weights_sha256"]
    assert _records(output) == _records(baseline[0])
    assert signal.getsignal(signal.SIGTERM) is handler  # the handlers are given back


@pytest.mark.keras
def test_a_signal_under_a_time_budget_saves_the_training_seconds(data, tmp_path, monkeypatch):
    from model.pretrain import run
    from model.pretrain.trainer import Trainer

    ticks = iter(np.arange(0.0, 1000.0, 0.25))
    train_step = Trainer.train_step

    def signal_during_step_3(trainer, batch):
        if trainer.step == 2:
            _signal_during_the_next_step(trainer)
        return train_step(trainer, batch)

    monkeypatch.setattr(Trainer, "train_step", signal_during_step_3)
    from model.pretrain import PretrainConfig

    budget = {k: v for k, v in SETTINGS.items() if k != "steps"}
    config = PretrainConfig(
        **budget, data=str(data), output=str(tmp_path / "out"), time_budget="1h"
    )
    with pytest.raises(Interrupted, match="at step 3: saved"):
        run(config, clock=lambda: next(ticks))
    state = checkpointing.read_state(
        checkpointing.checkpoint_path(config.output + "/checkpoints", 3)
    )
    (third,) = [r for r in _records(tmp_path / "out") if r["step"] == 3]
    assert 0 < third["training_seconds"] <= state["training_seconds"] < 3600


# Runs model.pretrain's command line and SIGKILLs itself half-way through the background write of
# ckpt-<KILL_AT>'s weights (the writer thread writes half the bytes, then the kill).
KILLED_WHILE_WRITING = """
import os, signal, sys
from model.checkpoints import store as checkpointing
from model.pretrain import main
kill_at = int(sys.argv[1])
open_file = checkpointing.open_file

class HalfWritten:
    def __init__(self, handle):
        self.handle = handle
    def __enter__(self):
        return self
    def __exit__(self, *exc):
        return self.handle.__exit__(*exc)
    def write(self, data):
        data = memoryview(data).cast("B")
        self.handle.write(data[: len(data) // 2])
        self.handle.flush()
        os.kill(os.getpid(), signal.SIGKILL)

def opening(path, mode="r", **kwargs):
    handle = open_file(path, mode, **kwargs).__enter__()
    if f"ckpt-{kill_at:09d}.tmp-" in path and path.endswith("weights.npz"):
        return HalfWritten(handle)
    return handle

checkpointing.open_file = opening
sys.exit(main(sys.argv[2:]))
"""


@pytest.mark.slow
def test_a_kill_during_a_background_write_keeps_the_previous_checkpoint(data, baseline, tmp_path):
    from model.pretrain import run

    output = tmp_path / "out"
    env = pretrain_runs.subprocess_env()
    killed = subprocess.run(
        [sys.executable, "-c", KILLED_WHILE_WRITING, "4", *_argv(data, output)],
        check=False,
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert killed.returncode == -signal.SIGKILL, killed.stderr[-3000:]
    (half,) = (output / "checkpoints").glob("ckpt-000000004.tmp-*/weights.npz")
    assert half.stat().st_size > 0  # the kill came half-way through the write
    assert _checkpoints(output) == [2]
    _assert_whole(output, 2)

    resumed = run(config(data, output))
    assert resumed["weights_sha256"] == baseline[1]["weights_sha256"]
    assert not list((output / "checkpoints").glob("*.tmp-*"))


# --------------------------------------------------------------------------------------------
# The background writer


def _arrays(value: float) -> dict[str, np.ndarray]:
    return {"model/w": np.full((4, 3), value, np.float32), "optimizer/m": np.zeros(3, np.float32)}


def test_one_write_in_flight_and_keep_prunes_only_committed_checkpoints(tmp_path, monkeypatch):
    directory = str(tmp_path / "checkpoints")
    started, release = threading.Event(), threading.Event()
    write = checkpointing.write_checkpoint

    def gated(directory, step, arrays, state, keep):  # the write of step 3 waits to be released
        if step == 3:
            started.set()
            release.wait(60)
        return write(directory, step, arrays, state, keep)

    monkeypatch.setattr(checkpointing, "write_checkpoint", gated)
    with CheckpointWriter() as writer:
        for step in (1, 2):
            writer.submit(directory, step, _arrays(step), {"epoch": 0}, keep=2)
        path = writer.submit(directory, 3, _arrays(3), {"epoch": 0}, keep=2)
        assert started.wait(60)
        assert [c.step for c in checkpointing.list_checkpoints(directory)] == [1, 2]
        fourth = threading.Thread(
            target=writer.submit, args=(directory, 4, _arrays(4), {}, 2), daemon=True
        )
        fourth.start()
        fourth.join(0.2)
        assert fourth.is_alive()  # the next save waits for the write in flight
        release.set()
        fourth.join(60)
    assert [c.step for c in checkpointing.list_checkpoints(directory)] == [3, 4]
    assert path == checkpointing.checkpoint_path(directory, 3)
    with np.load(Path(path) / "weights.npz") as arrays:
        np.testing.assert_array_equal(arrays["model/w"], _arrays(3)["model/w"])


def test_a_failed_write_raises_in_the_caller(tmp_path, caplog):
    blocked = tmp_path / "file"
    blocked.write_text("not a directory")
    writer = CheckpointWriter()
    writer.submit(str(blocked / "checkpoints"), 1, _arrays(1), {}, keep=1)
    with pytest.raises(OSError):
        writer.wait()
    writer.submit(str(blocked / "checkpoints"), 2, _arrays(2), {}, keep=1)
    with pytest.raises(OSError):
        writer.close()

    class Stopped(Exception):
        pass

    with pytest.raises(Stopped), CheckpointWriter() as writer:  # the run's own error wins
        writer.submit(str(blocked / "checkpoints"), 3, _arrays(3), {}, keep=1)
        raise Stopped
    assert "the checkpoint being written failed too" in caplog.text
