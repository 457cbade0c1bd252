"""Divergence: a non-finite loss or weights stop the run with an error that names what is kept."""

from __future__ import annotations

import numpy as np

from albert.errors import StageError
from albert.fs import join
from model.checkpoints.store import latest_checkpoint
from model.pretrain.config import PretrainConfig


def weights_finite(model) -> bool:
    """Whether every floating-point weight of `model` is finite (no NaN or inf)."""
    for variable in model.weights:
        value = np.asarray(variable.numpy() if hasattr(variable, "numpy") else variable)
        if np.issubdtype(value.dtype, np.floating) and not np.isfinite(value).all():
            return False
    return True


def diverged(config: PretrainConfig, step: int, what: str) -> StageError:
    """The error that stops a run whose loss or weights became non-finite: names the step and
    what is kept."""

    last = latest_checkpoint(join(config.output, "checkpoints"))
    kept = (
        f"the last finite checkpoint {last.path} (step {last.step}) is kept"
        if last
        else "no checkpoint was written"
    )
    return StageError(
        f"{config.output}: training diverged: the {what} became non-finite at step {step} "
        f"(--learning-rate {config.learning_rate}); stopped, {kept}, nothing exported"
    )
