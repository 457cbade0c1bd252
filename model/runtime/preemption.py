"""A preemption notice is a checkpoint, not a loss: SIGTERM or SIGINT during `model.pretrain.run`
stops training at a step every process agrees on, after a checkpoint at that step.

`run` joins the cluster, then opens `stop_on_signals(mode)` with the mode its process count gives
(`signal_mode`), and passes the `StopRequest` it yields to the run's checkpoints
(`model.checkpoints.manager.Checkpoints`), which the Trainer asks after every step
(`reached_preemption(step)`). Before that, the command's own first-instant handlers
(`albert.signals`) stop it (nothing is at stake); after it, they are back.

- **One process** (either backend). The handlers note the first signal; the step in flight
  finishes (with its record, evaluation and checkpoint, if due), a checkpoint is saved at that step
  through the usual atomic commit, and the run ends with `Interrupted` (exit 75,
  `albert.errors.EXIT_INTERRUPTED`). Later signals change nothing (each is logged): the save goes
  on, and a SIGKILL during it leaves the previous checkpoint whole. Before the first step and once
  the final checkpoint is committed (during the export), nothing is at stake: a signal ends the run
  at once.
- **Several JAX processes.** JAX's preemption service (on by default in `jax.distributed`) takes
  SIGTERM once the process has joined the job: the process that receives it tells the others
  through JAX's coordination service, and they agree on the next step every one of them reaches
  (`reached_preemption_sync_point(step)`, asked after every step at a cost of a lock, no
  collective). Every process stops there, process 0 saves, every process exits 75. SIGINT is
  passed on to it as SIGTERM; SIGTERM stays JAX's after the run (a later run in the process needs
  it).
- **TensorFlow on several workers** (TF_CONFIG): no agreement here; the run's handlers are not
  installed (docs/pretrain.md, "Preemptible accelerators").
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import threading
from collections.abc import Iterator

from albert import signals
from albert.errors import Interrupted
from albert.signals import SIGNALS, stopped_before_training
from model.runtime import distribute

logger = logging.getLogger(__name__)

MODES = ("one", "jax", "none")


class StopRequest:
    """Whether training stops for a signal, and at which step: asked by every process after every
    step (`agreed(step)`). `mode`: 'one' (our handlers), 'jax' (JAX's preemption service agrees on
    the step) or 'none' (no handlers: a request that never stops, `never()`)."""

    def __init__(self, mode: str):
        if mode not in MODES:
            raise ValueError(f"StopRequest mode {mode!r}: one of {MODES}")
        self.mode = mode
        self.signal_name: str | None = None  # the first signal noted, once there is one
        self.phase = "setup"  # 'setup', 'training', 'exporting': what a signal interrupts

    @classmethod
    def never(cls) -> StopRequest:
        """A request no signal reaches: for a Trainer run where nothing handles signals."""
        return cls("none")

    def note(self, number: int, frame=None) -> None:
        """The signal handler (main thread): note the signal; before training and during the
        export, end the run at once (nothing unsaved is at stake)."""
        name = signal.Signals(number).name
        if self.mode == "jax":  # SIGINT: JAX's preemption service agrees on the step
            self.signal_name = self.signal_name or name
            os.kill(os.getpid(), signal.SIGTERM)
            return
        if self.signal_name is not None:
            logger.warning(
                "%s: already stopping; the checkpoint is being saved (a SIGKILL now leaves the "
                "previous one whole)",
                name,
            )
            return
        self.signal_name = name
        if self.phase == "setup":
            raise stopped_before_training(number)
        if self.phase == "exporting":
            raise Interrupted(f"{name} during the export: the final checkpoint is saved")
        logger.warning(
            "%s: finishing the step in flight, then saving a checkpoint and stopping", name
        )

    def start_training(self) -> None:
        """Training begins: from now on a signal stops at the next step."""
        self.phase = "training"

    def agreed(self, step: int) -> bool:
        """Called by every process after every step (`step`: the Trainer's, the same on every
        process): whether training stops after this one."""
        if self.mode == "jax":
            from jax.experimental import multihost_utils  # heavy: JAX, only this path

            if not multihost_utils.reached_preemption_sync_point(step):
                return False
            self.signal_name = self.signal_name or "a preemption notice (SIGTERM to a process)"
            return True
        return self.signal_name is not None

    def training_done(self) -> None:
        """The final checkpoint is committed: a signal noted since the last step ends the run now
        (before the export), one that comes later ends it at once."""
        if self.mode != "one":
            return
        self.phase = "exporting"
        if self.signal_name is not None:
            raise Interrupted(
                f"{self.signal_name} after the last step: the final checkpoint is saved, "
                "the export is left to the re-run"
            )


def signal_mode(backend: str, processes: int) -> str:
    """How a run stops for a signal, once it has joined its cluster (`processes`: the JAX job's
    process count): 'jax' (several JAX processes, JAX's preemption service agreeing), 'none'
    (TensorFlow workers of a TF_CONFIG cluster, or JAX with its preemption service off), else
    'one'."""
    if backend == "jax" and processes > 1:
        import jax  # heavy: JAX, only this path (the job is joined: JAX is loaded)

        return "jax" if jax.config.jax_enable_preemption_service else "none"
    if backend != "jax" and distribute.cluster_size() > 1:
        return "none"
    return "one"


@contextlib.contextmanager
def stop_on_signals(mode: str) -> Iterator[StopRequest]:
    """SIGTERM and SIGINT noted by the `StopRequest` it yields for the block (with `mode='jax'`,
    SIGINT only: SIGTERM is JAX's); the previous handlers (the command's own, `albert.signals`)
    are restored after it. With `mode='none'` the request never stops and a signal ends the
    process as Python's defaults do (a TensorFlow worker resumes from its last periodic
    checkpoint); outside the main thread (where Python allows no handler) nothing is changed."""
    if threading.current_thread() is not threading.main_thread():
        logger.debug("not the main thread: signals are not handled here")
        yield StopRequest("none")
        return
    request = StopRequest(mode)
    handlers = {
        "none": {signal.SIGTERM: signal.SIG_DFL, signal.SIGINT: signal.default_int_handler},
        "jax": {signal.SIGINT: request.note},
        "one": dict.fromkeys(SIGNALS, request.note),
    }[mode]
    previous = {number: signal.signal(number, handler) for number, handler in handlers.items()}
    try:
        if (missed := signals.missed()) is not None:  # came before, and a library swallowed it
            raise stopped_before_training(missed)
        yield request
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler if handler is not None else signal.SIG_DFL)
