"""`--time-budget`: a duration's parsing and the learning-rate schedule laid over wall-clock time.

Cramming (Geiping & Goldstein 2022): a run given a time budget instead of a step count warms up,
then decays its learning rate to zero exactly when the budget is spent, and stops there. The warmup
counts optimizer steps (`--warmup-steps`), as the step schedule's does; the decay counts seconds of
training time, a resumed run continuing from the time its checkpoint records.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable

DURATION_UNITS = {"h": 3600.0, "m": 60.0, "s": 1.0}
DURATION_PATTERN = re.compile(r"(\d+(?:\.\d+)?)([hms])")


def parse_duration(text: str) -> float:
    """Seconds of a duration such as '2h', '45m', '90s' or '1h30m'; ValueError, one line, if not."""
    compact = text.strip().lower().replace(" ", "")
    parts = DURATION_PATTERN.findall(compact)
    if not compact or "".join(number + unit for number, unit in parts) != compact:
        raise ValueError(f"{text!r} is not a duration: write e.g. 2h, 45m, 90s or 1h30m")
    seconds = sum(float(number) * DURATION_UNITS[unit] for number, unit in parts)
    if seconds <= 0:
        raise ValueError(f"{text!r}: a time budget must be longer than 0 seconds")
    return seconds


def budget_learning_rate(
    peak: float,
    warmup_steps: int,
    budget_seconds: float,
    step: int,
    elapsed_seconds: float,
    power: float = 1.0,
) -> float:
    """The learning rate of optimizer step `step` (0-based) begun `elapsed_seconds` into the budget.

    As `WarmupPolynomialDecay` with time for steps: peak * step / warmup_steps during the warmup,
    else peak * (1 - elapsed / budget) ** power, which is 0 at the budget and after it.
    """
    if step < warmup_steps:
        return peak * step / warmup_steps
    remaining = max(0.0, 1.0 - elapsed_seconds / budget_seconds)
    return peak * remaining**power


class TrainingClock:
    """Training time spent against the budget: what the checkpoint recorded (`spent_before`) plus
    this process's time since `start()`. `clock` is injectable (tests); default time.monotonic."""

    def __init__(self, spent_before: float = 0.0, clock: Callable[[], float] | None = None):
        self.spent_before, self.clock = float(spent_before), clock or time.monotonic
        self.started: float | None = None

    def start(self) -> None:
        self.started = self.clock()

    def elapsed(self) -> float:
        if self.started is None:
            return self.spent_before
        return self.spent_before + (self.clock() - self.started)
