"""The input never waited on (issue 65, item 2): the batches placed on the devices ahead of the step
(`model.input.prefetch`) in their order, their errors and their end where they were, the thread
stopped when the loop ends, the position a checkpoint records that of the batches trained; the
input's workers sized from the step (`model.runtime.cores.workers_for`) and reopened mid-run with
the same items (`model.input.retune`). Pure, with fake devices; one JAX run against one without
prefetch."""

from __future__ import annotations

import contextlib
import threading
import time

import numpy as np
import pytest

from model.input.prefetch import DevicePrefetch, Placed, token_counts
from model.input.retune import RetunedBatches, seconds_per_item
from model.runtime.cores import workers_for


def items(count: int, log: list | None = None, fail_at: int | None = None):
    """(epoch, index, batch) over epochs of 3 batches; `log` records each one read."""
    for n in range(count):
        if n == fail_at:
            raise ValueError(f"record {n} is bad")
        if log is not None:
            log.append(n)
        mask = np.zeros((2, 4), np.int32)
        mask[:, : 1 + n % 4] = 1
        yield n // 3, n % 3, {"input_mask": mask, "n": n}


def place(batch):
    return {"on_device": batch["n"]}


def test_the_batches_arrive_placed_in_their_order_with_their_counts():
    with DevicePrefetch(items(7), place) as prefetch:
        got = list(prefetch)
    assert [(e, i, b.arrays["on_device"]) for e, i, b in got] == [
        (n // 3, n % 3, n) for n in range(7)
    ]
    assert [token_counts(b) for _, _, b in got] == [(2 * (1 + n % 4), 8, 2) for n in range(7)]
    assert token_counts({"input_mask": np.ones((2, 3))}) == (6, 6, 2)
    packed = {"input_mask": np.ones((2, 3)), "instance_ids": np.array([[1, 2, 2], [1, 1, 0]])}
    assert token_counts(packed) == (6, 6, 3)
    assert token_counts(Placed({}, 3, 4, 1)) == (3, 4, 1)


def test_two_batches_wait_placed_while_the_step_runs_and_close_stops_the_thread():
    read: list[int] = []
    prefetch = DevicePrefetch(items(100, read), place, depth=2)
    first = next(prefetch)
    deadline = time.monotonic() + 5
    while len(read) < 4 and time.monotonic() < deadline:  # 2 queued, 1 held by the blocked put
        time.sleep(0.01)
    time.sleep(0.05)
    assert first[2].arrays["on_device"] == 0 and len(read) == 4
    prefetch.close()
    assert not prefetch._thread.is_alive() and len(read) == 4
    assert next(prefetch, None) is None
    assert not [t for t in threading.enumerate() if t.name == "device-prefetch"]


def test_the_inputs_error_and_end_reach_the_loop_where_they_were():
    with DevicePrefetch(items(10, fail_at=2), place) as prefetch:
        assert [next(prefetch)[1] for _ in range(2)] == [0, 1]
        with pytest.raises(ValueError, match="record 2 is bad"):
            next(prefetch)
        assert next(prefetch, None) is None
    with DevicePrefetch(iter([]), place) as prefetch:
        assert next(prefetch, None) is None


class _Stream:
    """A stream of `items` from (epoch, skip) on; what opened and closed is logged."""

    def __init__(self, log: list):
        self.log = log

    def __call__(self, workers: int, epoch: int, skip: int):
        self.log.append(("open", workers, epoch, skip))
        return self

    def __enter__(self):
        return (item for item in items(30) if item[:2] >= self.log[-1][2:])

    def __exit__(self, *exc):
        self.log.append(("close",))


def test_reopened_with_other_workers_the_input_gives_the_same_items():
    log: list = []
    with RetunedBatches(_Stream(log), 0, 1, 1) as batches:
        first = [next(batches)[2]["n"] for _ in range(3)]
        batches.retune(0)  # the count running: nothing reopens
        batches.retune(3)
        rest = [item[2]["n"] for item in batches]
    assert first + rest == list(range(4, 30)) and batches.workers == 3
    assert log == [("open", 0, 1, 1), ("close",), ("open", 3, 2, 1), ("close",)]


def test_the_workers_follow_the_step_and_the_inputs_cost():
    assert workers_for(0.010, 0.050, 16) == 0  # one thread keeps up: no processes to start
    assert workers_for(0.040, 0.050, 16) == 0  # 1.25 x 40 ms = 50 ms: still one
    assert workers_for(0.100, 0.050, 16) == 3  # 2.5 workers' worth
    assert workers_for(1.0, 0.010, 16) == 15  # all cores but the training process's
    assert workers_for(1.0, 0.010, 1) == 1 and workers_for(0.0, 0.01, 8) == 0
    assert workers_for(0.01, 0.0, 4) == 3
    assert seconds_per_item(iter([]), 3) == 0.0 and seconds_per_item(range(3), 5) >= 0.0


def _trainer(steps: int, engine):
    """A Trainer on a fake engine (no model): tests/test_pretrain_loop_figures.py's."""
    pytest.importorskip("keras")
    from test_pretrain_loop_figures import BATCH, Log, _checkpoints

    from model.pretrain.config import PretrainConfig
    from model.pretrain.time_budget import TrainingClock
    from model.pretrain.trainer import Trainer

    config = PretrainConfig(
        data="d", output="o", steps=steps, batch_size=BATCH, log_every=100, eval_every=0
    )
    state = {"step": 0, "epoch": 0, "batch_in_epoch": 0}
    return Trainer(
        config, None, None, None, lambda step: 0.1, engine, Log(), {}, True, state,
        TrainingClock(), _checkpoints(config),
    )  # fmt: skip


class _SleepingEngine:
    """A device step of `seconds` (the host waits, as for a device)."""

    def __init__(self, seconds: float):
        self.seconds, self.placed = seconds, []

    def step(self, batch):
        self.placed.append(isinstance(batch, Placed))
        time.sleep(self.seconds)
        return np.ones(6)

    def compilations(self) -> int:
        return 1


def _slow(source, seconds: float):
    for item in source:
        time.sleep(seconds)
        yield item


def test_the_position_is_the_trained_batches_and_the_wait_is_what_prefetch_leaves():
    """A step of 30 ms on batches of 30 ms: without prefetch the loop waits half its time, with it
    the wait is the first batch's; the trainer stops at its last step's position, whatever was read
    ahead."""
    figures = {}
    for prefetch in (False, True):
        read: list[int] = []
        trainer = _trainer(7, _SleepingEngine(0.03))
        batches = _slow(items(20, read), 0.03)
        with DevicePrefetch(batches, place) if prefetch else contextlib.nullcontext(batches) as b:
            trainer.train(b)
        figures[prefetch] = trainer.loop_figures["input_wait_share"]
        assert (trainer.step, trainer.epoch, trainer.batch_in_epoch) == (7, 2, 1)
        assert len(read) >= 7 and all(trainer.engine.placed) == prefetch
    assert figures[False] > 0.35 and figures[True] < 0.25, figures


@pytest.mark.keras
def test_a_jax_run_with_prefetch_trains_the_same_weights_as_without(tmp_path_factory, monkeypatch):
    import keras
    import pretrain_runs

    if keras.config.backend() != "jax":
        pytest.skip("the device prefetch is the JAX engine's")
    from model.pretrain import run
    from model.pretrain.jax_step import JaxTraining

    output, prefetched = pretrain_runs.reference(tmp_path_factory)
    monkeypatch.setattr(JaxTraining, "prefetch", 0)
    settings = pretrain_runs.config(
        pretrain_runs.records(tmp_path_factory), tmp_path_factory.mktemp("no-prefetch")
    )
    alone = run(settings)
    assert alone["weights_sha256"] == prefetched["weights_sha256"]
    assert pretrain_runs.metrics_records(settings.output) == pretrain_runs.metrics_records(output)
    assert prefetched["real_token_share"] == alone["real_token_share"] > 0
