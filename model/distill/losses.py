"""The distillation's Keras side: `keras.distillation.Distiller` over a teacher read from the
teacher-outputs cache (`CachedTeacher`), with the soft-target loss of the task's kind.

What Keras gives: `Distiller` mixes the student's own loss and the distillation losses
(`student_loss_weight` * labels + (1 - it) * soft targets: here 1 - alpha), and
`LogitsDistillation` divides both logits by T and, with a `KLDivergence` loss instance, returns
T^2 * KL(softmax(teacher / T) || softmax(student / T)) (Hinton et al.). Passed as the string
'kl_divergence' it would not: the string resolves to the loss *function*, which
`LogitsDistillation` applies to the scaled logits as if they were probabilities, without the
softmax or T^2; the instance is passed here. What it lacks and is added: `Distiller` runs the
teacher at every step; `CachedTeacher` is a teacher without weights that returns the outputs the
batch carries (`x["teacher"]`, read from the cache), cut to the batch's length for SQuAD's
per-token logits (the batches are trimmed to their longest example, the cache holds the full
length; the cut positions are padding); and `Distiller.compile` with a dict of losses (SQuAD's)
fails at the first step (`CachedDistiller.compile`)."""

from __future__ import annotations

import keras

from model.finetune.kind import inputs_of


class CachedTeacher(keras.Model):
    """The teacher's outputs as the batch carries them (see the module docstring): `logits`, or
    `{start_logits, end_logits}` (`span`) cut to the inputs' length."""

    def __init__(self, span: bool, **kwargs):
        super().__init__(**kwargs)
        self.span = span

    def build(self, input_shape=None):
        self.built = True

    def call(self, inputs, training=False):
        cached = inputs["teacher"]
        if not self.span:
            return cached["logits"]
        length = keras.ops.shape(inputs["input_ids"])[-1]
        return {name: values[:, :length] for name, values in cached.items()}


class CachedDistiller(keras.distillation.Distiller):
    """`Distiller` whose student sees the model inputs only (not the cached teacher outputs the
    batch carries); `backbone` is the student's (layer-wise learning rates)."""

    def compile(self, optimizer="adam", loss=None, metrics=None, **kwargs):
        """`Distiller.compile`, a dict of losses (SQuAD's start and end) kept a plain dict: as a
        Model's attribute Keras tracks it as a `TrackedDict`, which `keras.tree` refuses to pair
        with the labels' dict."""
        super().compile(optimizer=optimizer, loss=loss, metrics=metrics, **kwargs)
        if isinstance(loss, dict):
            object.__setattr__(self, "_student_loss", dict(self._student_loss))

    def build(self, input_shape=None):  # the student is built, the teacher has no weights
        self.built = True

    def call(self, inputs, training=None):
        return self.student(inputs_of(inputs), training=training)

    @property
    def backbone(self):
        return self.student.backbone


def soft_target_loss(kind: str, temperature: float) -> keras.distillation.LogitsDistillation:
    """The soft-target loss of a task kind: T^2 * KL at temperature T over the class, choice or
    (SQuAD) start and end position logits; STS-B's one score has no distribution, its target is
    the teacher's score (squared error, T = 1)."""
    if kind == "regression":
        return keras.distillation.LogitsDistillation(1.0, keras.losses.MeanSquaredError())
    if kind == "span":
        kl = {name: keras.losses.KLDivergence() for name in ("start_logits", "end_logits")}
        return keras.distillation.LogitsDistillation(temperature, kl)
    return keras.distillation.LogitsDistillation(temperature, keras.losses.KLDivergence())


def make_distiller(
    student: keras.Model, kind: str, temperature: float, alpha: float
) -> CachedDistiller:
    """The student trained on alpha * soft targets + (1 - alpha) * labels (module docstring)."""
    return CachedDistiller(
        teacher=CachedTeacher(kind == "span", name="cached_teacher"),
        student=student,
        distillation_losses=soft_target_loss(kind, temperature),
        student_loss_weight=1.0 - alpha,
        name="distiller",
    )
