"""Divergence: a non-finite loss or weights stop the run with an error that names what is kept
(`model.checkpoints.divergence`, shared with fine-tuning and distillation)."""

from __future__ import annotations

from albert.errors import StageError
from albert.fs import join
from model.checkpoints import divergence
from model.checkpoints.divergence import weights_finite
from model.pretrain.config import PretrainConfig

__all__ = ["diverged", "weights_finite"]


def diverged(config: PretrainConfig, step: int, what: str) -> StageError:
    """The error that stops a run whose loss or weights became non-finite: names the step and
    what is kept."""
    return divergence.diverged(
        config.output,
        join(config.output, "checkpoints"),
        step,
        what,
        f"--learning-rate {config.learning_rate}",
    )
