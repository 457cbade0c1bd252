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
fails at the first step (`CachedDistiller.compile`). With TinyBERT's intermediate losses
(`model.distill.matching`), the teacher's model runs at every step for its hidden states and
attention scores (their cache would be examples x layers x T x H floats: SST-2's at albert-base
s128 is over 100 GB), its weights frozen; the logits still come from the cache."""

from __future__ import annotations

import keras

from model.distill.matching import LayerMatching
from model.finetune.kind import TaskKind, inputs_of


class CachedTeacher(keras.Model):
    """The teacher's outputs as the batch carries them (see the module docstring): `logits`, or
    `{start_logits, end_logits}` (`token_outputs`: SQuAD's) cut to the inputs' length. `model`:
    the teacher's `FinetuneModel`, for the intermediate features (`intermediate`), or None."""

    def __init__(self, token_outputs: bool, model: keras.Model | None = None, **kwargs):
        super().__init__(**kwargs)
        self.token_outputs, self.model = token_outputs, model

    def intermediate(self, inputs) -> dict:
        """The teacher model's backbone outputs with its hidden states and attention scores."""
        return self.model.call_with_outputs(inputs_of(inputs), False, intermediate=True)[1]

    def build(self, input_shape=None):
        self.built = True

    def call(self, inputs, training=False):
        cached = inputs["teacher"]
        if not self.token_outputs:
            return cached["logits"]
        length = keras.ops.shape(inputs["input_ids"])[-1]
        return {name: values[:, :length] for name, values in cached.items()}


class CachedDistiller(keras.distillation.Distiller):
    """`Distiller` whose student sees the model inputs only (not the cached teacher outputs the
    batch carries); `backbone` is the student's (layer-wise learning rates). `matching` (or None)
    adds the intermediate losses, with a `projection` of the student's hidden states to the
    teacher's width where they differ (trained with the student, not part of it)."""

    def __init__(self, *args, matching: LayerMatching | None = None, **kwargs):
        super().__init__(*args, **kwargs)
        self.matching, self.projection = matching, None
        if matching is not None and matching.student_width != matching.teacher_width:
            self.projection = keras.layers.Dense(matching.teacher_width, name="hidden_projection")
            self.projection.build((None, None, matching.student_width))
        object.__setattr__(self, "_student_outputs", None)

    def _create_multi_feature_extractors(self):
        """None: the features are extracted by name (`_extract_all_*_features`), not by the
        functional sub-models `Distiller` builds."""

    def _extract_all_teacher_features(self, x):
        features = {"final_output": self.teacher(x, training=False)}
        if self.matching is not None:
            features.update(self.matching.features(self.teacher.intermediate(x), "teacher"))
        return features

    def _extract_all_student_features(self, x, y_pred):
        """The features of the student's pass that gave `y_pred` (`call` keeps them while
        training); outside training (an evaluation's loss) the student runs again."""
        if self.matching is None:
            return {"final_output": y_pred}
        outputs = self._student_outputs
        object.__setattr__(self, "_student_outputs", None)
        if outputs is None:
            outputs = self.student.call_with_outputs(inputs_of(x), False, intermediate=True)[1]
        features = self.matching.features(outputs, "student", self.projection)
        return {"final_output": y_pred, **features}

    def compile(self, optimizer="adam", loss=None, metrics=None, **kwargs):
        """`Distiller.compile`, a dict of losses (SQuAD's start and end) kept a plain dict: as a
        Model's attribute Keras tracks it as a `TrackedDict`, which `keras.tree` refuses to pair
        with the labels' dict."""
        super().compile(optimizer=optimizer, loss=loss, metrics=metrics, **kwargs)
        if isinstance(loss, dict):
            object.__setattr__(self, "_student_loss", dict(self._student_loss))

    def build(self, input_shape=None):  # the student and the teacher's model come built
        self.built = True

    def call(self, inputs, training=None):
        if self.matching is None or not training:
            return self.student(inputs_of(inputs), training=training)
        prediction, outputs = self.student.call_with_outputs(
            inputs_of(inputs), training, intermediate=True
        )
        object.__setattr__(self, "_student_outputs", outputs)  # for this step's loss, same trace
        return prediction

    @property
    def backbone(self):
        return self.student.backbone


def make_distiller(
    student: keras.Model,
    kind: TaskKind,
    temperature: float,
    alpha: float,
    teacher: keras.Model | None = None,
    hidden_weight: float = 0.0,
    attention_weight: float = 0.0,
) -> CachedDistiller:
    """The student trained on (1 - alpha) * labels + alpha * (soft targets, `kind`'s
    `TaskKind.soft_target_loss`, + `hidden_weight` *
    each hidden-state pair's MSE + `attention_weight` * each attention pair's), the intermediate
    pairs `model.distill.matching`'s against `teacher` (the teacher's `FinetuneModel`, needed
    when either weight is above 0)."""
    losses, weights, matching = [kind.soft_target_loss(temperature)], [1.0], None
    if hidden_weight > 0 or attention_weight > 0:
        matching = LayerMatching.between(
            student.backbone.config, teacher.backbone.config, hidden_weight, attention_weight
        )
        more, more_weights = matching.losses()
        losses, weights = losses + more, weights + more_weights
    return CachedDistiller(
        teacher=CachedTeacher(
            kind.token_outputs, teacher if matching else None, name="cached_teacher"
        ),
        student=student,
        distillation_losses=losses,
        distillation_loss_weights=weights,
        student_loss_weight=1.0 - alpha,
        matching=matching,
        name="distiller",
    )
