"""A preemption notice is a checkpoint, not a loss: SIGTERM or SIGINT during `model.pretrain.run`
stops training at a step every process agrees on, after a checkpoint at that step.

- **One process** (either backend). The handlers note the first signal; the step in flight
  finishes (with its record, evaluation and checkpoint, if due), a checkpoint is saved at that step
  through the usual atomic commit, and the run ends with `Interrupted` (exit 75,
  `albert.errors.EXIT_INTERRUPTED`). Later signals change nothing (each is logged): the save goes
  on, and a SIGKILL during it leaves the previous checkpoint whole. Before the first step and once
  the final checkpoint is committed (during the export), nothing is at stake: a signal ends the run
  at once.
- **Several JAX processes.** JAX's preemption service (on by default in `jax.distributed`) takes
  SIGTERM once the process has joined the job (before, nothing is at stake and a signal ends it as
  it would have): the process that receives it tells the others through JAX's coordination
  service, and they agree on the next step every one of them reaches
  (`reached_preemption_sync_point`, asked after every step at a cost of a lock, no collective).
  Every process stops there, process 0 saves, every process exits 75. SIGINT is passed on to it as
  SIGTERM; SIGTERM stays JAX's after the run (a later run in the process needs it).
- **TensorFlow on several workers** (TF_CONFIG): no agreement here; the handlers are not installed
  and a signal ends a worker as before (docs/pretrain.md, "Preemptible accelerators").

`run` is wrapped by `stops_on_signals`; the `Trainer` asks the active `StopRequest` (`active()`)
after every step.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import logging
import os
import signal
import threading
from collections.abc import Callable, Iterator

from albert.errors import Interrupted
from model import distribute

logger = logging.getLogger(__name__)

SIGNALS = (signal.SIGTERM, signal.SIGINT)


class StopRequest:
    """Whether training stops for a signal, and at which step: asked by every process after every
    step (`agreed`). `processes`: 'one' (our handlers), 'jax' (JAX's preemption service agrees on
    the step) or 'none' (no handlers: a request that never stops)."""

    def __init__(self, processes: str = "none"):
        self.processes = processes
        self.signal_name: str | None = None  # the first signal noted, once there is one
        self.phase = "setup"  # 'setup', 'training', 'exporting': what a signal interrupts
        self.steps = 0  # steps asked about in this run: JAX's sync point counts them

    def note(self, number: int, frame=None) -> None:
        """The signal handler (main thread): note the signal; before training and during the
        export, end the run at once (nothing unsaved is at stake)."""
        name = signal.Signals(number).name
        if self.processes == "jax":  # SIGINT: JAX's preemption service agrees on the step
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
            raise Interrupted(f"{name} before the first step: nothing to save")
        if self.phase == "exporting":
            raise Interrupted(f"{name} during the export: the final checkpoint is saved")
        logger.warning(
            "%s: finishing the step in flight, then saving a checkpoint and stopping", name
        )

    def start_training(self) -> None:
        """Training begins: from now on a signal stops at the next step."""
        self.phase = "training"

    def agreed(self) -> bool:
        """Called by every process after every step: whether training stops after this one."""
        if self.processes == "jax":
            from jax.experimental import multihost_utils  # heavy: JAX, only this path

            self.steps += 1
            if not multihost_utils.reached_preemption_sync_point(self.steps):
                return False
            self.signal_name = self.signal_name or "a preemption notice (SIGTERM to a process)"
            return True
        return self.signal_name is not None

    def training_done(self) -> None:
        """The final checkpoint is committed: a signal noted since the last step ends the run now
        (before the export), one that comes later ends it at once."""
        if self.processes != "one":
            return
        self.phase = "exporting"
        if self.signal_name is not None:
            raise Interrupted(
                f"{self.signal_name} after the last step: the final checkpoint is saved, "
                "the export is left to the re-run"
            )


_ACTIVE: contextvars.ContextVar[StopRequest | None] = contextvars.ContextVar(
    "stop_request", default=None
)


def active() -> StopRequest:
    """The stop request of the run in progress in this thread (one that never stops outside
    `stop_on_signals`)."""
    return _ACTIVE.get() or StopRequest()


def processes_of(config) -> str:
    """How a run of `config` (a PretrainConfig) stops for a signal: 'jax' (several JAX processes,
    JAX's preemption service agreeing), 'none' (TensorFlow workers of a TF_CONFIG cluster, or JAX
    with its preemption service off), else 'one'."""
    import keras  # heavy: Keras loads its backend; `run` loads it anyway

    if keras.config.backend() == "jax":
        try:
            cluster = distribute.jax_cluster(
                config.coordinator, config.num_processes, config.process_id
            )
        except Exception:  # noqa: BLE001  (bad flags: `run` reports them, before any step)
            cluster = None
        if cluster is None:
            return "one"
        import jax  # heavy: JAX, only this path

        return "jax" if jax.config.jax_enable_preemption_service else "none"
    return "none" if distribute.cluster_size() > 1 else "one"


@contextlib.contextmanager
def stop_on_signals(processes: str) -> Iterator[StopRequest]:
    """SIGTERM and SIGINT noted by a `StopRequest` (the active one, `active()`) for the block
    (with `processes='jax'`, SIGINT only: SIGTERM is JAX's); the previous handlers are restored
    after it. Outside the main thread (where Python allows no handler) and for
    `processes='none'`, the request never stops."""
    if processes == "none" or threading.current_thread() is not threading.main_thread():
        if processes != "none":
            logger.debug("not the main thread: signals are not handled here")
        processes = "none"
    request = StopRequest(processes)
    handled = {"none": (), "jax": (signal.SIGINT,), "one": SIGNALS}[processes]
    previous = {number: signal.signal(number, request.note) for number in handled}
    token = _ACTIVE.set(request)
    try:
        yield request
    finally:
        _ACTIVE.reset(token)
        for number, handler in previous.items():
            signal.signal(number, handler if handler is not None else signal.SIG_DFL)


def stops_on_signals(run: Callable[..., dict]) -> Callable[..., dict]:
    """Decorator of `run(config, ...)`: the whole run under `stop_on_signals`, for the processes
    `config` describes (`processes_of`)."""

    @functools.wraps(run)
    def stopping_run(config, *args, **kwargs) -> dict:
        with stop_on_signals(processes_of(config)):
            return run(config, *args, **kwargs)

    return stopping_run
