"""The distillation's Keras side: the student trained on its task's labels and on a teacher read
from the teacher-outputs cache (`CachedTeacher`), with the soft-target loss of the task's kind.

The step is Keras's own `fit` step; `CachedDistiller` owns its two public hooks: `call` (the
student's prediction, with its intermediate outputs while training with TinyBERT's losses) and
`compute_loss`: `student_loss_weight` * the compiled loss on the labels (`Model.compute_loss`: a
dict of losses for SQuAD's start and end) + (1 - it, alpha) * the distillation losses, each
`keras.distillation` loss's `compute_loss`. `LogitsDistillation` divides both logits by T and,
with a `KLDivergence` loss instance, returns T^2 * KL(softmax(teacher / T) || softmax(student /
T)) (Hinton et al.); passed as the string 'kl_divergence' it would not (the string resolves to
the loss *function*, which it applies to the scaled logits as if they were probabilities, without
the softmax or T^2), so the instance is passed. The teacher is `CachedTeacher`, a model without
weights that returns the outputs the batch carries (`x["teacher"]`, read from the cache), cut to
the batch's length for SQuAD's per-token logits (the batches are trimmed to their longest
example, the cache holds the full length; the cut positions are padding). With TinyBERT's
intermediate losses (`model.distill.matching`), the teacher's model runs at every step for its
hidden states and attention scores (their cache would be examples x layers x T x H floats:
SST-2's at albert-base s128 is over 100 GB), its weights frozen; the logits still come from the
cache."""

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


class CachedDistiller(keras.Model):
    """The student (the model inputs only, not the cached teacher outputs the batch carries)
    trained on `student_loss_weight` * its compiled loss + (1 - it) * the soft targets
    (`soft_targets`, against `teacher`'s final outputs) and, with `matching`, the intermediate
    losses, each pair at its weight, with a `projection` of the student's hidden states to the
    teacher's width where they differ (trained with the student, not part of it). `backbone` is
    the student's (layer-wise learning rates)."""

    def __init__(
        self,
        teacher: CachedTeacher,
        student: keras.Model,
        soft_targets: keras.distillation.DistillationLoss,
        student_loss_weight: float,
        matching: LayerMatching | None = None,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.teacher, self.student = teacher, student
        self.teacher.trainable = False
        self.soft_targets, self.student_loss_weight = soft_targets, student_loss_weight
        self.matching, self.projection = matching, None
        if matching is not None and matching.student_width != matching.teacher_width:
            self.projection = keras.layers.Dense(matching.teacher_width, name="hidden_projection")
            self.projection.build((None, None, matching.student_width))

    def build(self, input_shape=None):  # the student and the teacher's model come built
        self.built = True

    def call(self, inputs, training=None):
        """The student's prediction; while training with `matching`, `(prediction, its backbone's
        outputs)`: one pass gives `compute_loss` both."""
        if self.matching is None or not training:
            return self.student(inputs_of(inputs), training=training)
        return self.student.call_with_outputs(inputs_of(inputs), training, intermediate=True)

    def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None, training=True):
        """The weighted sum (the class docstring) for a batch `x` (with its cached teacher
        outputs), its labels `y` and `call`'s `y_pred`; outside training (an evaluation's loss)
        the student runs again for its intermediate outputs."""
        prediction, outputs = y_pred if self.matching and training else (y_pred, None)
        labels = super().compute_loss(x, y, prediction, sample_weight, training)
        distillation = self.soft_targets.compute_loss(self.teacher(x, training=False), prediction)
        if self.matching is not None:
            if outputs is None:
                outputs = self.student.call_with_outputs(inputs_of(x), False, intermediate=True)[1]
            student = self.matching.features(outputs, "student", self.projection)
            teacher = self.matching.features(self.teacher.intermediate(x), "teacher")
            for loss, weight in zip(*self.matching.losses()):
                pair = loss.compute_loss(
                    teacher[loss.teacher_layer_name], student[loss.student_layer_name]
                )
                distillation = distillation + weight * pair
        weight = self.student_loss_weight
        return weight * labels + (1.0 - weight) * distillation

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
    matching = None
    if hidden_weight > 0 or attention_weight > 0:
        matching = LayerMatching.between(
            student.backbone.config, teacher.backbone.config, hidden_weight, attention_weight
        )
    return CachedDistiller(
        teacher=CachedTeacher(
            kind.token_outputs, teacher if matching else None, name="cached_teacher"
        ),
        student=student,
        soft_targets=kind.soft_target_loss(temperature),
        student_loss_weight=1.0 - alpha,
        matching=matching,
        name="distiller",
    )
