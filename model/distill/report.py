"""The distillation report's pure parts: forward FLOPs per token from a model's config, and the
teacher and the student side by side (`distillation.md`)."""

from __future__ import annotations

from model.network.config import AlbertConfig


def flops_per_token(config: AlbertConfig, seq_length: int) -> int:
    """Forward FLOPs per token of the encoder (2 per multiply-add), which every application of
    a shared layer pays again: the E -> H projection (when E != H), then per layer the Q, K, V
    and output projections (4 H^2), the feed-forward (2 H F) and attention's scores and mixing
    over `seq_length` positions (2 T H). Embedding lookups and the task head are left out."""
    h, f, layers = config.hidden_size, config.intermediate_size, config.num_hidden_layers
    projection = config.embedding_size * h if config.has_embedding_projection else 0
    per_layer = 4 * h * h + 2 * h * f + 2 * seq_length * h
    return 2 * (projection + layers * per_layer)


def side_by_side(teacher: dict, student: dict, metric: str) -> str:
    """A Markdown table of the teacher and the student (`serving_costs` plus `dev`)."""
    sizes = sorted(set(teacher["sequences_per_second"]) | set(student["sequences_per_second"]))
    head = ["", f"dev {metric}", "parameters", "FLOPs per token"]
    head += [f"sequences/s at batch {size}" for size in sizes]
    rows = []
    for name, facts in (("teacher", teacher), ("student", student)):
        cells = [name, f"{facts['dev'].get(metric, float('nan')):.4f}"]
        cells += [f"{facts['parameters']:,}", f"{facts['flops_per_token']:,}"]
        cells += [f"{facts['sequences_per_second'].get(s, float('nan')):.1f}" for s in sizes]
        rows.append(cells)
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    return "\n".join(lines + ["| " + " | ".join(row) + " |" for row in rows]) + "\n"
