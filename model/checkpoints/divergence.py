"""Divergence: a non-finite loss or weights stop a training run (pretraining, fine-tuning,
distillation) with one error that names the step, the setting to change and the last finite
checkpoint, which is kept; nothing is exported."""

from __future__ import annotations

import numpy as np

from albert.errors import StageError
from model.checkpoints.store import latest_checkpoint


def weights_finite(model) -> bool:
    """Whether every floating-point weight of `model` is finite (no NaN or inf)."""
    for variable in model.weights:
        value = np.asarray(variable.numpy() if hasattr(variable, "numpy") else variable)
        if np.issubdtype(value.dtype, np.floating) and not np.isfinite(value).all():
            return False
    return True


def diverged(output: str, checkpoints: str, step: int, what: str, settings: str) -> StageError:
    """The error that stops the run writing `output` whose `what` (the training loss, the model
    weights, ...) became non-finite at `step`: names `settings` (the flags to change) and the newest
    checkpoint in the directory `checkpoints` (all of them finite: none is written after this)."""
    last = latest_checkpoint(checkpoints)
    kept = (
        f"the last finite checkpoint {last.path} (step {last.step}) is kept"
        if last
        else "no checkpoint was written"
    )
    return StageError(
        f"{output}: training diverged: the {what} became non-finite at step {step} "
        f"({settings}); stopped, {kept}, nothing exported"
    )
