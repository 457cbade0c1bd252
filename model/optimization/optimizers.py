"""The ALBERT paper's optimizers and learning-rate schedule, as backend-agnostic Keras 3 optimizers.

`Lamb` follows google-research/albert's `lamb_optimizer.py` (the optimizer the paper trained with):

    m <- b1 m + (1 - b1) g;   v <- b2 v + (1 - b2) g^2
    u  = m / (sqrt(v) + eps)                  (no bias correction, as the reference)
    u += wd * w                               unless w is a LayerNorm or bias variable
    r  = ||w|| / ||u||  (1 where either is 0), 1 for LayerNorm and bias variables
    w <- w - lr * r * u

Keras' built-in `keras.optimizers.Lamb` differs: it applies decoupled weight decay outside the
trust ratio and adapts every variable. Gradient clipping by global norm (1.0 in the paper) is
Keras' `global_clipnorm`, applied to the fully reduced gradient before `update_step`.

Both take TensorFlow's gradients of embedding lookups dense (`DenseGradients`): Keras, given them
as `tf.IndexedSlices`, would square each lookup's row before summing an id's repeats.
"""

from __future__ import annotations

from typing import Literal

import keras
from keras import ops

from model.optimization.weight_decay import DEFAULT_EXCLUDE, is_excluded


def dense_gradients(grads) -> list:
    """`grads` with TensorFlow's `tf.IndexedSlices` made dense (other backends: as they are).

    TensorFlow's gradient of an embedding lookup holds one row per lookup: an id looked up k times
    in the batch (`[CLS]`, a common word, token type 0) has k rows there. Keras' ops square such a
    gradient row by row before the rows of one id are summed, so Keras' global norm (clipping)
    and Adam's second moment would take sum(g_i^2) for that id where torch and JAX, summing first,
    take (sum g_i)^2: on the TF backend the clipping norm came out too small."""
    if keras.config.backend() != "tensorflow":
        return list(grads)
    import tensorflow as tf  # the TensorFlow backend is loaded already

    return [tf.convert_to_tensor(g) if isinstance(g, tf.IndexedSlices) else g for g in grads]


class DenseGradients:
    """Optimizer mixin: `apply` (which `fit` and `apply_gradients` call) first makes the gradients
    dense (`dense_gradients`), so clipping and the update see every backend's gradient."""

    def apply(self, grads, trainable_variables=None):
        return super().apply(dense_gradients(grads), trainable_variables)


@keras.saving.register_keras_serializable(package="albert")
class Lamb(DenseGradients, keras.optimizers.Optimizer):
    """Layer-wise adaptive moments (You et al. 2019) exactly as ALBERT's reference
    implementation."""

    def __init__(
        self,
        learning_rate=0.00176,
        beta_1: float = 0.9,
        beta_2: float = 0.999,
        epsilon: float = 1e-6,
        weight_decay_rate: float = 0.01,
        exclude_patterns: tuple[str, ...] | list[str] = DEFAULT_EXCLUDE,
        global_clipnorm: float | None = 1.0,
        name: str = "lamb",
        **kwargs,
    ):
        super().__init__(
            learning_rate=learning_rate, global_clipnorm=global_clipnorm, name=name, **kwargs
        )
        self.beta_1 = beta_1
        self.beta_2 = beta_2
        self.epsilon = epsilon
        self.weight_decay_rate = weight_decay_rate
        self.exclude_patterns = tuple(exclude_patterns)

    def build(self, var_list):
        if self.built:
            return
        super().build(var_list)
        self._momentums = self.add_optimizer_variables(var_list, "momentum")
        self._velocities = self.add_optimizer_variables(var_list, "velocity")
        self._adapted = [not is_excluded(v.path, self.exclude_patterns) for v in var_list]

    def update_step(self, gradient, variable, learning_rate):
        index = self._get_variable_index(variable)
        m, v = self._momentums[index], self._velocities[index]
        dtype = variable.dtype
        gradient = ops.cast(gradient, dtype)
        learning_rate = ops.cast(learning_rate, dtype)
        self.assign(
            m, ops.add(ops.multiply(m, self.beta_1), ops.multiply(gradient, 1.0 - self.beta_1))
        )
        self.assign(
            v,
            ops.add(
                ops.multiply(v, self.beta_2), ops.multiply(ops.square(gradient), 1.0 - self.beta_2)
            ),
        )
        update = ops.divide(m, ops.add(ops.sqrt(v), self.epsilon))
        if self._adapted[index]:
            update = ops.add(update, ops.multiply(variable, self.weight_decay_rate))
            w_norm = ops.sqrt(ops.sum(ops.square(variable)))
            u_norm = ops.sqrt(ops.sum(ops.square(update)))
            ratio = ops.where(
                ops.greater(w_norm, 0.0),
                ops.where(
                    ops.greater(u_norm, 0.0), ops.divide(w_norm, ops.maximum(u_norm, 1e-30)), 1.0
                ),
                1.0,
            )
            update = ops.multiply(update, ratio)
        self.assign_sub(variable, ops.multiply(update, learning_rate))

    def get_config(self):
        config = super().get_config()
        config.update(
            beta_1=self.beta_1,
            beta_2=self.beta_2,
            epsilon=self.epsilon,
            weight_decay_rate=self.weight_decay_rate,
            exclude_patterns=list(self.exclude_patterns),
        )
        return config


@keras.saving.register_keras_serializable(package="albert")
class AdamW(DenseGradients, keras.optimizers.AdamW):
    """Keras' AdamW with ε added to the bias-corrected √v̂, as torch.optim.AdamW (Hugging Face's)
    and Loshchilov & Hutter's algorithm do:

        w <- w - lr * m̂ / (√v̂ + ε),   m̂ = m / (1 - β1^t),   v̂ = v / (1 - β2^t)

    Keras adds ε to √v before the correction (Kingma & Ba's "ε-hat"): an ε 1/√(1 - β2^t) times
    larger (32x at step 1, 3x at step 500 with β2 0.999), which damps the early updates of weights
    with small gradients, such as the embedding rows of rare pieces. Weight decay is Keras'
    (decoupled, lr x weight_decay x w, before the update), as torch's.
    """

    def update_step(self, gradient, variable, learning_rate):
        dtype = variable.dtype
        lr, gradient = ops.cast(learning_rate, dtype), ops.cast(gradient, dtype)
        step = ops.cast(self.iterations + 1, dtype)
        beta_1_power = ops.power(ops.cast(self.beta_1, dtype), step)
        beta_2_power = ops.power(ops.cast(self.beta_2, dtype), step)
        index = self._get_variable_index(variable)
        m, v = self._momentums[index], self._velocities[index]
        self.assign_add(m, ops.multiply(ops.subtract(gradient, m), 1 - self.beta_1))
        self.assign_add(v, ops.multiply(ops.subtract(ops.square(gradient), v), 1 - self.beta_2))
        denominator = ops.add(ops.sqrt(ops.divide(v, 1 - beta_2_power)), self.epsilon)
        update = ops.divide(ops.divide(m, 1 - beta_1_power), denominator)
        self.assign_sub(variable, ops.multiply(update, lr))


@keras.saving.register_keras_serializable(package="albert")
class WarmupPolynomialDecay(keras.optimizers.schedules.LearningRateSchedule):
    """The reference's schedule: lr * step/warmup during warmup, else polynomial decay to `end`.

    As in google-research/albert, the decay runs over all `total_steps` from step 0 and the warmup
    replaces it for the first `warmup_steps`: lr(t) = peak * (1 - t/total)^power for t >= warmup.
    """

    def __init__(
        self, peak: float, warmup_steps: int, total_steps: int, end: float = 0.0, power: float = 1.0
    ):
        self.peak, self.warmup_steps, self.total_steps = (
            float(peak),
            int(warmup_steps),
            int(total_steps),
        )
        self.end, self.power = float(end), float(power)

    def __call__(self, step):
        step = ops.cast(step, "float32")
        progress = ops.minimum(step, float(self.total_steps)) / float(max(self.total_steps, 1))
        decayed = (self.peak - self.end) * ops.power(1.0 - progress, self.power) + self.end
        if self.warmup_steps <= 0:
            return decayed
        warmup = self.peak * step / float(self.warmup_steps)
        return ops.where(ops.less(step, float(self.warmup_steps)), warmup, decayed)

    def get_config(self):
        return {
            "peak": self.peak,
            "warmup_steps": self.warmup_steps,
            "total_steps": self.total_steps,
            "end": self.end,
            "power": self.power,
        }


def build_optimizer(
    name: Literal["lamb", "adamw"],
    schedule: keras.optimizers.schedules.LearningRateSchedule,
    *,
    weight_decay: float = 0.01,
    clipnorm: float | None = 1.0,
    beta_1: float = 0.9,
    beta_2: float = 0.999,
    epsilon: float = 1e-6,
) -> keras.optimizers.Optimizer:
    """LAMB (the paper's) or AdamW (torch's ε placement) with LayerNorm/bias excluded from weight
    decay."""
    clip = clipnorm if clipnorm and clipnorm > 0 else None
    if name == "lamb":
        return Lamb(schedule, beta_1, beta_2, epsilon, weight_decay, global_clipnorm=clip)
    if name == "adamw":
        optimizer = AdamW(
            schedule,
            weight_decay=weight_decay,
            beta_1=beta_1,
            beta_2=beta_2,
            epsilon=epsilon,
            global_clipnorm=clip,
        )
        optimizer.exclude_from_weight_decay(var_names=list(DEFAULT_EXCLUDE))
        return optimizer
    raise ValueError(f"unknown optimizer {name!r} (expected 'lamb' or 'adamw')")
