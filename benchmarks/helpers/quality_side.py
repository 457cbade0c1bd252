"""A side of benchmarks/quality.py: a judge that takes one raw document text to its Outcome (kept
with its output lines, or removed by a named rule), and the clock every side is timed by."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import NamedTuple


class Outcome(NamedTuple):
    """One document on one side: kept, its output lines, and the rule that removed it."""

    kept: bool
    lines: tuple[str, ...]
    rule: str | None = None
    value: float | None = None
    threshold: float | None = None


def run_side(docs, judge: Callable[[str], Outcome]) -> tuple[list[Outcome], float]:
    """Every document's outcome and the CPU seconds they took (after one warm-up document)."""
    judge(docs[0].text)
    start = time.process_time()
    outcomes = [judge(doc.text) for doc in docs]
    return outcomes, time.process_time() - start
