"""Long texts, the first strategy of Sun et al. (2019), "How to Fine-Tune BERT for Text
Classification": keep the head, the tail, or the head and the tail of a text (head 128 + tail 382
of 510 in the paper; the tail takes whatever the head leaves)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

Truncation = Literal["head", "tail", "head_tail"]


def truncate_tokens(
    tokens: Sequence, budget: int, strategy: Truncation = "head", head_tokens: int = 128
) -> list:
    """At most `budget` tokens: the first (`head`), the last (`tail`), or the first
    `min(head_tokens, budget)` plus the last of the rest (`head_tail`)."""
    tokens = list(tokens)
    if len(tokens) <= budget:
        return tokens
    if budget <= 0:
        return []
    if strategy == "head":
        return tokens[:budget]
    if strategy == "tail":
        return tokens[-budget:]
    if strategy == "head_tail":
        head = min(head_tokens, budget)
        tail = budget - head
        return tokens[:head] + (tokens[-tail:] if tail else [])
    raise ValueError(f"unknown truncation strategy {strategy!r}")


def pair_budgets(len_a: int, len_b: int, budget: int) -> tuple[int, int]:
    """Token budgets of two segments sharing `budget`: the longer loses tokens first (BERT's
    rule)."""
    while len_a + len_b > budget:
        if len_a > len_b:
            len_a -= 1
        else:
            len_b -= 1
    return len_a, len_b


def truncate_pair(
    a: Sequence,
    b: Sequence | None,
    budget: int,
    strategy: Truncation = "head",
    head_tokens: int = 128,
) -> tuple[list, list | None]:
    """Truncate one segment or a pair to `budget` tokens, each segment by `strategy`."""
    if b is None:
        return truncate_tokens(a, budget, strategy, head_tokens), None
    budget_a, budget_b = pair_budgets(len(a), len(b), budget)
    return (
        truncate_tokens(a, budget_a, strategy, head_tokens),
        truncate_tokens(b, budget_b, strategy, head_tokens),
    )
