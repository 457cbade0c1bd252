"""A run's checkpoints as one object, in the shape of Orbax's `CheckpointManager`: when to save
(`should_save(step)`), whether every process stops at this step for a signal
(`reached_preemption(step)`, JAX's multihost sync point with several processes) and the background
write (`save`, `wait`: a `model.checkpoints.writer.CheckpointWriter`).

The Trainer asks it after every step; `model.pretrain.run` builds it with the run's
`model.runtime.preemption.StopRequest` (a Trainer built elsewhere passes `StopRequest.never()` where
no signal is to stop it) and closes it before the output's lock is released (a context manager:
leaving it waits for the write in flight).
"""

from __future__ import annotations

from typing import Self

import numpy as np

from model.checkpoints.writer import CheckpointWriter
from model.runtime.preemption import StopRequest


class Checkpoints:
    """The checkpoints of one run in `directory`: one every `every` steps, the newest `keep` kept,
    written by the chief only (`chief`), a stop for a signal agreed through `stop`."""

    def __init__(self, directory: str, every: int, keep: int, chief: bool, stop: StopRequest):
        self.directory, self.every, self.keep, self.chief = directory, every, keep, chief
        self.stop = stop
        self.writer = CheckpointWriter()

    def should_save(self, step: int) -> bool:
        """Is a periodic checkpoint due at `step`?"""
        return step % self.every == 0

    def reached_preemption(self, step: int) -> bool:
        """Asked by every process after every step: does training stop after `step` for a signal?
        (True at the same step on every process.)"""
        return self.stop.agreed(step)

    @property
    def signal_name(self) -> str | None:
        """The signal the run stops for, once there is one."""
        return self.stop.signal_name

    def training_started(self) -> None:
        """Training begins: a signal from now on stops at the next step, after a checkpoint."""
        self.stop.start_training()

    def save(self, step: int, arrays: dict[str, np.ndarray], state: dict) -> str | None:
        """Write `arrays` (a snapshot the caller no longer changes) and `state` as the checkpoint of
        `step` in the background; its path on the chief (whole once `wait` returns), else None."""
        if not self.chief:
            return None
        return self.writer.submit(self.directory, step, arrays, state, self.keep)

    def wait(self) -> str | None:
        """Block until the write in flight is committed (its error raised here)."""
        return self.writer.wait()

    def raise_if_failed(self) -> None:
        """Raise the error of a background write that has already failed."""
        self.writer.raise_if_failed()

    def training_done(self) -> None:
        """The final checkpoint is committed: a signal noted since the last step ends the run."""
        self.writer.wait()
        self.stop.training_done()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, kind, error, traceback) -> None:
        self.writer.__exit__(kind, error, traceback)
