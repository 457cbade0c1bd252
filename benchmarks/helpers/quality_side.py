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
    reference_score: float | None = None
    kept_by_reference: bool = False
    pending: object = None
    """A side's state of a document it judges only once it has seen them all (`finish`)."""


def judge_all(texts, judge: Callable[[str], Outcome]) -> list[Outcome]:
    """Every text's outcome: each judged in turn, then the side's `finish` (where it has one: a
    judge that learns from the documents it has seen) on them all."""
    outcomes = [judge(text) for text in texts]
    finish = getattr(judge, "finish", None)
    return finish(outcomes) if finish else outcomes


def run_side(docs, judge: Callable[[str], Outcome]) -> tuple[list[Outcome], float]:
    """Every document's outcome and the CPU seconds they took (after one warm-up document)."""
    judge_all([docs[0].text], judge)
    start = time.process_time()
    outcomes = judge_all([doc.text for doc in docs], judge)
    return outcomes, time.process_time() - start
