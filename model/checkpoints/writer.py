"""Checkpoint writes off the training step: the arrays are copied to host memory at the step
(`checkpointing.snapshot`, on the training thread), then serialised, committed and pruned
(`checkpointing.write_checkpoint`) in a background thread while training goes on.

At most one write is in flight: the next save, the end of the run and a stop for a signal wait for
it (`submit`, `wait`, leaving the `with` block). A write that fails raises its error in the training
thread, at the next step (`raise_if_failed`), save or wait: never swallowed. A kill at any moment
leaves the previous checkpoints whole: each write is an atomic commit of its own, and `keep` prunes
only committed checkpoints, after the new one is committed.

A thread of our own, over our own commit, rather than Orbax's AsyncCheckpointer: see
docs/pretrain.md, "Preemptible accelerators".
"""

from __future__ import annotations

import logging
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Self

import numpy as np

from model.checkpoints import store as checkpointing

logger = logging.getLogger(__name__)


class CheckpointWriter:
    """Writes checkpoints one at a time in a background thread (a context manager: leaving it waits
    for the write in flight)."""

    def __init__(self):
        self._executor: ThreadPoolExecutor | None = None
        self._pending: Future | None = None

    def submit(
        self, directory: str, step: int, arrays: dict[str, np.ndarray], state: dict, keep: int
    ) -> str:
        """Start writing `arrays` (a snapshot the caller no longer changes) as `ckpt-<step>`, once
        the previous write is committed (its error, if it failed, is raised here); returns the
        checkpoint's path, whole once `wait` returns."""
        self.wait()
        if self._executor is None:
            self._executor = ThreadPoolExecutor(1, thread_name_prefix="checkpoint-writer")
        self._pending = self._executor.submit(
            checkpointing.write_checkpoint, directory, step, arrays, state, keep
        )
        return checkpointing.checkpoint_path(directory, step)

    def wait(self) -> str | None:
        """Block until the write in flight is committed; its path (None if there was none). Raises
        the write's error."""
        pending, self._pending = self._pending, None
        return pending.result() if pending is not None else None

    def raise_if_failed(self) -> None:
        """Raise the error of a write that has already failed (without waiting for one that is
        still running)."""
        if self._pending is not None and self._pending.done() and self._pending.exception():
            self.wait()

    def close(self) -> None:
        """Wait for the write in flight and stop the thread."""
        try:
            self.wait()
        finally:
            if self._executor is not None:
                self._executor.shutdown(wait=True)
                self._executor = None

    def __enter__(self) -> Self:
        return self

    def __exit__(self, kind, error, traceback) -> None:
        if error is None:
            self.close()
            return
        try:  # the run failed or stopped: the write in flight still commits, its error is logged
            self.close()
        except Exception as failure:  # noqa: BLE001  (the run's own error is the one raised)
            logger.error("the checkpoint being written failed too: %s", failure)
