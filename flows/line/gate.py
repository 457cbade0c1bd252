"""The promotion gate of a model line: a night's candidate becomes `current` only if it is better on
the domain's held-out documents and no worse than a tolerance on the base's general held-out set.

Both comparisons are of masked-LM loss (nats per masked token), the candidate against its parent on
the same held-out sequences: a change in loss is the log of the perplexity ratio, so the margin and
the tolerance read the same at any loss level (0.01 ≈ 1% perplexity).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

LOSS = "masked_lm_loss"


@dataclass(frozen=True)
class Decision:
    """The gate's verdict: promoted or not, why in one line, and both changes (candidate minus
    parent; a negative in-domain change is an improvement, a positive general one forgetting)."""

    promoted: bool
    reason: str
    domain_change: float
    general_change: float


def decide(
    candidate: Mapping[str, Mapping[str, Any]],
    parent: Mapping[str, Mapping[str, Any]],
    *,
    min_improvement: float,
    max_forgetting: float,
) -> Decision:
    """Promote when in-domain loss falls by at least `min_improvement` and general loss rises by at
    most `max_forgetting`. `candidate` and `parent` map "domain" and "general" to held-out metrics
    (model.evaluation.heldout); a missing or non-finite loss is refused, never promoted."""
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
    if failures:
        return Decision(False, "; ".join(failures), domain_change, general_change)
    reason = (
        f"{domain_text}, margin {min_improvement:g}; {general_text}, tolerance {max_forgetting:g}"
    )
    return Decision(True, reason, domain_change, general_change)


def held_out_loss(scores: Mapping[str, Any] | None, held_out: str) -> float | None:
    """The masked-LM loss in `scores` (a version's scores by held-out set) on `held_out`; None when
    it has none."""
    value = ((scores or {}).get(held_out) or {}).get(LOSS)
    return float(value) if isinstance(value, (int, float)) else None


def _loss(scores: Mapping[str, Mapping[str, Any]], held_out: str) -> float:
    value = held_out_loss(scores, held_out)
    return value if value is not None and math.isfinite(value) else math.nan
