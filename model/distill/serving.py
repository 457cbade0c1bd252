"""What a fine-tuned model costs to serve: parameters, forward FLOPs per token
(`model.distill.report`) and measured inference sequences per second at a batch size."""

from __future__ import annotations

import time

import keras
import numpy as np

from model.distill.report import flops_per_token


def parameters(model: keras.Model) -> int:
    """The model's weights, counted (every weight, trainable or not)."""
    return int(sum(np.prod(w.shape) for w in model.weights))


def serving_batch(inputs: dict[str, np.ndarray], batch_size: int) -> dict[str, np.ndarray]:
    """The first `batch_size` examples of `inputs`, repeated when there are fewer."""
    count = len(inputs["input_ids"])
    index = np.arange(batch_size) % count
    return {name: values[index] for name, values in inputs.items()}


def compiled_forward(model: keras.Model):
    """batch -> outputs of `model` in inference, compiled as a served model would be (a
    `tf.function` on TensorFlow, `jax.jit` of the stateless call on JAX): what is timed is the
    model, not `predict`'s per-call data handling."""
    backend = keras.config.backend()
    if backend == "jax":
        import jax  # the JAX backend's own

        trainable = [v.value for v in model.trainable_variables]
        fixed = [v.value for v in model.non_trainable_variables]
        step = jax.jit(lambda t, n, batch: model.stateless_call(t, n, batch, training=False)[0])
        return lambda batch: step(trainable, fixed, batch)
    if backend == "tensorflow":
        import tensorflow as tf  # the TensorFlow backend's own

        return tf.function(lambda batch: model(batch, training=False))
    return lambda batch: model(batch, training=False)


def sequences_per_second(
    model: keras.Model, inputs: dict[str, np.ndarray], batch_size: int, iterations: int
) -> float:
    """Inference examples per second of `model` (`compiled_forward`) on batches of `batch_size`
    taken from `inputs` (full length), the median of `iterations` timed calls after one untimed
    (its compilation), each call's outputs copied to host memory."""
    batch = serving_batch(inputs, batch_size)
    forward = compiled_forward(model)
    keras.tree.map_structure(np.asarray, forward(batch))
    times = []
    for _ in range(iterations):
        start = time.perf_counter()
        keras.tree.map_structure(np.asarray, forward(batch))
        times.append(time.perf_counter() - start)
    return batch_size / float(np.median(times))


def serving_costs(
    model: keras.Model,
    inputs: dict[str, np.ndarray],
    seq_length: int,
    batch_sizes: tuple[int, ...],
    iterations: int,
) -> dict:
    """{parameters, flops_per_token, sequences_per_second: {batch size: rate}} of `model`."""
    sizes = batch_sizes if iterations else ()
    rates = {str(size): sequences_per_second(model, inputs, size, iterations) for size in sizes}
    return {
        "parameters": parameters(model),
        "flops_per_token": flops_per_token(model.backbone.config, seq_length),
        "sequences_per_second": rates,
    }
