"""The promotion gate of a model line: a night's candidate becomes `current` only if it is better on
the domain's held-out documents and no worse than a tolerance on the base's general held-out set,
and, with a gate task (`TaskGate`: a registered task or a team's own, one of its dev metrics), no
worse on that task than its parent, both fine-tuned alike.

The first two comparisons are of masked-LM loss (nats per masked token), the candidate against its
parent on the same held-out sequences: a change in loss is the log of the perplexity ratio, so the
margin and the tolerance read the same at any loss level (0.01 ≈ 1% perplexity). The task's is of
its dev metric, in the metric's own units (a fall of `tolerance` at most; `mse`, the one metric
whose fall is a gain, may rise by at most that much).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

LOSS = "masked_lm_loss"
LOWER_IS_BETTER = ("mse",)  # the tasks' dev metrics that improve as they fall


@dataclass(frozen=True)
class TaskGate:
    """The gate's task: its name, the dev metric compared and how much worse the candidate may
    be on it."""

    task: str
    metric: str
    tolerance: float = 0.0


@dataclass(frozen=True)
class Decision:
    """The gate's verdict: promoted or not, why in one line, and both changes (candidate minus
    parent; a negative in-domain change is an improvement, a positive general one forgetting)."""

    promoted: bool
    reason: str
    domain_change: float
    general_change: float
    task_change: float | None = None


def decide(
    candidate: Mapping[str, Mapping[str, Any]],
    parent: Mapping[str, Mapping[str, Any]],
    *,
    min_improvement: float,
    max_forgetting: float,
    task: TaskGate | None = None,
) -> Decision:
    """Promote when in-domain loss falls by at least `min_improvement`, general loss rises by at
    most `max_forgetting` and, with `task`, its metric is no worse than `task.tolerance` allows.
    `candidate` and `parent` map "domain" and "general" to held-out metrics
    (model.evaluation.heldout) and, with `task`, "task" to the fine-tune's dev metrics; a missing
    or non-finite loss or metric is refused, never promoted."""
    parent_domain, domain = _loss(parent, "domain"), _loss(candidate, "domain")
    parent_general, general = _loss(parent, "general"), _loss(candidate, "general")
    domain_change, general_change = domain - parent_domain, general - parent_general
    domain_text = (
        f"in-domain masked-LM loss {parent_domain:.4f} -> {domain:.4f} ({domain_change:+.4f})"
    )
    general_text = (
        f"general masked-LM loss {parent_general:.4f} -> {general:.4f} ({general_change:+.4f})"
    )
    failures = []
    if not -domain_change >= min_improvement:  # NaN fails too
        failures.append(f"{domain_text} does not improve by the margin {min_improvement:g}")
    if not general_change <= max_forgetting:
        failures.append(f"{general_text} worsens by more than the tolerance {max_forgetting:g}")
    task_text, task_change = "", None
    if task is not None:
        task_change, task_text, task_failure = task_verdict(candidate, parent, task)
        failures += [task_failure] if task_failure else []
    if failures:
        return Decision(False, "; ".join(failures), domain_change, general_change, task_change)
    reason = (
        f"{domain_text}, margin {min_improvement:g}; {general_text}, tolerance {max_forgetting:g}"
    )
    reason += f"; {task_text}, tolerance {task.tolerance:g}" if task is not None else ""
    return Decision(True, reason, domain_change, general_change, task_change)


def task_verdict(
    candidate: Mapping[str, Mapping[str, Any]],
    parent: Mapping[str, Mapping[str, Any]],
    task: TaskGate,
) -> tuple[float, str, str | None]:
    """(the metric's change, candidate minus parent; its line; why it refuses, or None) of the
    gate task's dev metric in `candidate["task"]` against `parent["task"]`."""
    before, after = _metric(parent, task.metric), _metric(candidate, task.metric)
    change = after - before
    text = f"{task.task} dev {task.metric} {before:.4f} -> {after:.4f} ({change:+.4f})"
    worsening = change if task.metric in LOWER_IS_BETTER else -change
    if not worsening <= task.tolerance:  # NaN fails too
        return change, text, f"{text} worsens by more than the tolerance {task.tolerance:g}"
    return change, text, None


def held_out_loss(scores: Mapping[str, Any] | None, held_out: str) -> float | None:
    """The masked-LM loss in `scores` (a version's scores by held-out set) on `held_out`; None when
    it has none."""
    value = ((scores or {}).get(held_out) or {}).get(LOSS)
    return float(value) if isinstance(value, (int, float)) else None


def _loss(scores: Mapping[str, Mapping[str, Any]], held_out: str) -> float:
    value = held_out_loss(scores, held_out)
    return value if value is not None and math.isfinite(value) else math.nan


def _metric(scores: Mapping[str, Mapping[str, Any]], metric: str) -> float:
    value = (scores.get("task") or {}).get(metric)
    return float(value) if isinstance(value, (int, float)) and math.isfinite(value) else math.nan
