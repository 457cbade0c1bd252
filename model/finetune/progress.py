"""What a fine-tuning run says while it trains: one progress line every `PROGRESS_SECONDS` (the
step, steps per second, the time left, the last training loss), one at each dev evaluation (the
metric and the best so far), and, once the first steps are measured, one estimate of the whole run
(its steps, the measured rate, the expected end) which, when the run would take more than an hour
on a CPU, says how to make it shorter.

The lines are log records (`logging`, the run's stderr): whole lines, so a log file reads as a
terminal does, with no carriage return or colour code in either. `--quiet` turns them off. The
first step is not measured: it holds the step's compilation.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from datetime import datetime, timedelta

logger = logging.getLogger(__name__)

PROGRESS_SECONDS = 15.0
"""Seconds between two progress lines (evaluations and the last step have their own)."""
ESTIMATE_STEPS, ESTIMATE_SECONDS = 10, 5.0
"""The estimate comes once this many steps after the first are measured, or this many seconds."""
LONG_ON_CPU = 3600.0
"""A run longer than this on a CPU is told how to be shorter."""
SHORT_RUN_SECONDS = 600.0
"""The length of the shorter run that advice suggests."""


def duration(seconds: float) -> str:
    """'2 h 31 min', '4 min 10 s', '12 s'."""
    seconds = max(0, round(seconds))
    hours, rest = divmod(seconds, 3600)
    minutes, seconds = divmod(rest, 60)
    if hours:
        return f"{hours} h {minutes:02d} min"
    return f"{minutes} min {seconds:02d} s" if minutes else f"{seconds} s"


class Progress:
    """The progress of one training phase (`label`, e.g. 'sst2' or 'multitask') of `total` steps,
    starting at `start` (a resumed run's step). `max_seq_length` and `accelerator` shape the
    advice of a long run; `clock` (seconds) and `now` (wall time) are for tests."""

    def __init__(
        self,
        label: str,
        total: int,
        start: int = 0,
        *,
        max_seq_length: int,
        accelerator: bool,
        quiet: bool = False,
        clock: Callable[[], float] = time.monotonic,
        now: Callable[[], datetime] = datetime.now,
    ):
        self.label, self.total, self.start = label, total, start
        self.max_seq_length, self.accelerator, self.quiet = max_seq_length, accelerator, quiet
        self.clock, self.now = clock, now
        self.measured_from: tuple[int, float] | None = None  # (step, time) after the first step
        self.last_line = -float("inf")
        self.estimated = False
        self.estimate_text: str | None = None

    def began(self) -> None:
        """Training (or its resumption) begins."""
        if self.quiet:
            return
        resumed = f", resumed at step {self.start:,}" if self.start else ""
        logger.info("%s: training %s steps%s", self.label, f"{self.total:,}", resumed)

    def rate(self, step: int) -> float | None:
        """Steps per second since the first step of this process (None before two steps)."""
        if self.measured_from is None or step <= self.measured_from[0]:
            return None
        first, since = self.measured_from
        return (step - first) / max(self.clock() - since, 1e-9)

    def step(self, step: int, loss: Callable[[], float]) -> None:
        """Step `step` is done; `loss()` is the training loss (read only when a line is due: it
        waits for the step)."""
        if self.quiet:
            return
        now = self.clock()
        if self.measured_from is None:
            self.measured_from = (step, now)
            return
        measured = step - self.measured_from[0]
        if not self.estimated and (
            measured >= ESTIMATE_STEPS or now - self.measured_from[1] >= ESTIMATE_SECONDS
        ):
            self.estimated = True
            self.estimate_text = self.estimate(step)
            logger.info("%s", self.estimate_text)
        if now - self.last_line >= PROGRESS_SECONDS or step == self.total:
            self.last_line = now
            logger.info("%s", self.line(step, loss()))

    def line(self, step: int, loss: float) -> str:
        """'sst2: step 120/300 (40%), 9.8 steps/s, 18 s left, loss 0.6931'."""
        rate = self.rate(step)
        speed = f", {rate:.3g} steps/s" if rate else ""
        left = (
            f", {duration((self.total - step) / rate)} left" if rate and step < self.total else ""
        )
        return (
            f"{self.label}: step {step:,}/{self.total:,} ({100 * step // max(self.total, 1)}%)"
            f"{speed}{left}, loss {loss:.4f}"
        )

    def estimate(self, step: int) -> str:
        """The whole run's estimate from the rate measured up to `step` (see the module
        docstring)."""
        rate = self.rate(step) or 0.0
        seconds = (self.total - step) / rate if rate else 0.0
        end = (self.now() + timedelta(seconds=seconds)).strftime("%H:%M")
        text = (
            f"{self.label}: {self.total:,} steps at {rate:.3g} steps/s (measured over steps "
            f"{self.measured_from[0] + 1}-{step}): about {duration(seconds)} left, ending around "
            f"{end} (dev evaluations not counted)"
        )
        if self.accelerator or seconds <= LONG_ON_CPU:
            return text
        shorter = max(1, int(rate * SHORT_RUN_SECONDS))
        length = (
            f" or --max-seq-length {min(128, self.max_seq_length // 2)}"
            if self.max_seq_length > 64
            else ""
        )
        return (
            f"{text}. Over an hour on this CPU: --train-steps {shorter:,} (about "
            f"{duration(SHORT_RUN_SECONDS)}){length} makes it shorter"
        )

    def evaluated(self, step: int, metric: str, value: float, best: float, best_step: int) -> None:
        """The dev evaluation after `step`."""
        if self.quiet:
            return
        logger.info(
            "%s: step %s/%s, dev %s %.4f (best %.4f, step %s)",
            self.label,
            f"{step:,}",
            f"{self.total:,}",
            metric,
            value,
            best,
            f"{best_step:,}",
        )
