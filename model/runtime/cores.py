"""The cores an input may use: `--input-workers` of pretraining and fine-tuning, and whether the
training step runs on an accelerator (which decides its default)."""

from __future__ import annotations

import math
import os


def available_cores() -> int:
    """The CPU cores this process may run on (its affinity where the OS says, else all)."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()


def input_workers(requested: int | None, on_accelerator: bool) -> int:
    """`--input-workers`: as asked; by default every core this process may use when the step runs on
    an accelerator, and 0 (the input prepared in the training process) on CPU, whose cores the
    training step needs itself."""
    if requested is not None:
        return requested
    return available_cores() if on_accelerator else 0


def on_accelerator(tpu: bool = False) -> bool:
    """Does the training step run on a GPU or TPU (of the Keras backend this run uses)? `tpu`: the
    TensorFlow backend trains on a TPU."""
    import keras  # heavy: loaded when training

    if keras.config.backend() == "jax":
        import jax  # heavy: only the JAX backend needs it

        return jax.default_backend() != "cpu"
    import tensorflow as tf  # heavy: only the TensorFlow backend needs it

    return bool(tpu or tf.config.list_physical_devices("GPU"))


HEADROOM = 1.25  # the input's rate over the step's, when sizing the workers


def workers_for(batch_seconds: float, step_seconds: float, cores: int) -> int:
    """The input workers that keep up with a step of `step_seconds` when one prepares a batch in
    `batch_seconds` (`HEADROOM` over the step's rate): 0 (a thread of the training process, which
    starts at once and copies nothing between processes) while one is enough, else that many
    processes, at most all cores but the training process's one (and at least one)."""
    if batch_seconds <= 0:
        return 0
    most = max(1, cores - 1)
    if step_seconds <= 0:
        return most
    needed = HEADROOM * batch_seconds / step_seconds
    return 0 if needed <= 1 else min(math.ceil(needed), most)
