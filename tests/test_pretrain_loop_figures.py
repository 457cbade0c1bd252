"""The training loop's figures (`Trainer.loop_figures`): every batch's tokens and wait counted, the
whole loop's rate and the steady steps' rate apart, from a trainer driven by a fake engine on a
fake clock (no model, no Keras step)."""

from __future__ import annotations

import numpy as np
import pytest

from model.checkpoints.manager import Checkpoints
from model.pretrain.config import PretrainConfig
from model.pretrain.time_budget import TrainingClock
from model.runtime.preemption import StopRequest

BATCH = 4


class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


class Engine:
    """Each step takes 1 s, 9 s more when its batch's length is new (a compilation)."""

    def __init__(self, clock: Clock):
        self.clock, self.shapes = clock, set()

    def step(self, batch):
        length = batch["input_mask"].shape[1]
        self.clock.now += 1.0 + 9.0 * (length not in self.shapes)
        self.shapes.add(length)
        return np.ones(6)

    def compilations(self) -> int:
        return len(self.shapes)


class Log:
    def __init__(self):
        self.records = []

    def record(self, record):
        self.records.append(record)

    def progress(self, *args):
        pass

    def __len__(self):
        return len(self.records)


def _checkpoints(config: PretrainConfig) -> Checkpoints:
    """None due within these runs' steps; no signal stops them."""
    return Checkpoints("o/checkpoints", config.checkpoint_every, 1, True, StopRequest.never())


def batches(clock: Clock, epochs: list[list[tuple[int, int]]]):
    """(epoch, index, batch) with `real` of `length` tokens a row; each takes 0.5 s to arrive, 2 s
    the first of an epoch."""
    for epoch, shapes in enumerate(epochs):
        for index, (real, length) in enumerate(shapes):
            clock.now += 2.0 if index == 0 else 0.5
            mask = np.zeros((BATCH, length), np.int32)
            mask[:, :real] = 1
            yield epoch, index, {"input_mask": mask}


def test_the_loop_counts_every_batch_and_reports_the_steady_rate_apart(monkeypatch):
    pytest.importorskip("keras")
    from model.pretrain import trainer as trainer_module

    clock = Clock()
    monkeypatch.setattr(trainer_module.time, "perf_counter", clock)
    config = PretrainConfig(
        data="d", output="o", steps=6, batch_size=BATCH, log_every=100, eval_every=0
    )
    state = {"step": 0, "epoch": 0, "batch_in_epoch": 0}
    trainer = trainer_module.Trainer(
        config, None, None, None, lambda step: 0.1, Engine(clock), Log(), {}, True, state,
        TrainingClock(clock=clock), _checkpoints(config),
    )  # fmt: skip
    # epoch 0: two batches of length 8, epoch 1: a new length (16), then two more of 16
    trainer.train(batches(clock, [[(6, 8), (8, 8)], [(4, 16), (16, 16), (12, 16), (2, 8)]]))
    figures = trainer.loop_figures
    assert (trainer.step, trainer.epoch, trainer.batch_in_epoch) == (6, 1, 4)
    # waits 2 + 0.5 + 2 + 0.5 + 0.5 + 0.5 = 6 s; steps 6 + 2 compilations x 9 = 24 s
    assert figures["loop_sequences_per_second"] == pytest.approx(6 * BATCH / 30.0, abs=0.1)
    assert figures["input_wait_share"] == pytest.approx(6 / 30, abs=1e-4)
    real = BATCH * (6 + 8 + 4 + 16 + 12 + 2)  # the first batch of each epoch counted too
    assert figures["real_token_share"] == pytest.approx(
        real / (BATCH * (8 + 8 + 16 * 3 + 8)), abs=1e-4
    )
    assert figures["real_tokens_per_second"] == pytest.approx(real / 30.0, abs=0.1)
    # steady: every step but the two that compiled (the first, and the first of length 16)
    assert figures["steady_steps"] == 4
    assert figures["steady_sequences_per_second"] == pytest.approx(4 * BATCH / 6.0, abs=0.1)
    steady_real = BATCH * (8 + 16 + 12 + 2)
    assert figures["steady_real_tokens_per_second"] == pytest.approx(steady_real / 6.0, abs=0.1)
    # unpacked rows: an instance each
    assert figures["instances_per_second"] == figures["loop_sequences_per_second"]
    assert figures["steady_instances_per_second"] == figures["steady_sequences_per_second"]


def test_batches_ending_before_the_steps_are_a_clear_error(monkeypatch):
    pytest.importorskip("keras")
    from albert.errors import StageError
    from model.pretrain import trainer as trainer_module

    clock = Clock()
    config = PretrainConfig(data="d", output="o", steps=6, batch_size=BATCH, eval_every=0)
    state = {"step": 0, "epoch": 0, "batch_in_epoch": 0}
    trainer = trainer_module.Trainer(
        config, None, None, None, lambda step: 0.1, Engine(clock), Log(), {}, True, state,
        TrainingClock(clock=clock), _checkpoints(config),
    )  # fmt: skip
    with pytest.raises(StageError, match="d: fewer training records than one batch of 4"):
        trainer.train(iter([]))


@pytest.mark.keras
def test_progress_in_a_log_that_is_no_terminal_is_whole_lines(tmp_path, capsys, caplog):
    """Where stdout is no terminal (a log file, a pipe), the progress is a plain line per record,
    as fine-tuning's: no carriage return, no colour code."""
    from model.pretrain.run_log import RunLog

    log = RunLog(str(tmp_path), 10, None, 0, True, True, None)
    metrics = {"loss": 2.5, "masked_lm_accuracy": 0.25, "sop_accuracy": 0.5}
    with caplog.at_level("INFO"):
        log.progress(5, metrics, 12.0)
    out = capsys.readouterr()
    assert "\x1b" not in out.out + out.err and "\r" not in out.out + out.err
    assert "step 5/10: loss 2.5000, mlm_acc 0.2500, sop_acc 0.5000, 12.0 steps/s" in caplog.text
