"""Which variables weight decay (and LAMB's layer adaptation) leaves out: pure, no Keras, so that
tools outside the trainer (e.g. benchmarks' Hugging Face sides) apply the same rule cheaply."""

from __future__ import annotations

import re

# Variables named like these are excluded from weight decay and layer adaptation (the reference's
# ["LayerNorm", "layer_norm", "bias"]; Keras names LayerNormalization's weights gamma/beta).
DEFAULT_EXCLUDE = ("LayerNorm", "layer_norm", "layernorm", "bias", "gamma", "beta")


def is_excluded(variable_path: str, patterns: tuple[str, ...] = DEFAULT_EXCLUDE) -> bool:
    """True when any pattern occurs in the variable's path (e.g. 'encoder/layer_norm/gamma')."""
    return any(re.search(pattern, variable_path) for pattern in patterns)
