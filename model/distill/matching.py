"""TinyBERT's intermediate-layer distillation (Jiao et al. 2020): the student's hidden states,
through a learned projection where the widths differ, and its attention scores are fitted to the
teacher's by mean squared error, on top of the soft targets.

Which states meet which: ALBERT applies one layer's shared weights at every depth, so what there
is to match is each *application*, and student application `l` of `L_s` (0-based) meets the
teacher's application at the same relative depth, `ceil((l + 1) * L_t / L_s) - 1`: TinyBERT's
uniform mapping (`g(m) = m * L_t / L_s`, 1-based) where `L_s` divides `L_t`, the last application
always the teacher's last. The embedding output (hidden state 0, after the E->H projection) meets
the teacher's. The attention targets are the scaled query-key products before the softmax, 0
where a key is hidden or the query is padding (TinyBERT's targets: they converge faster than the
probabilities), head by head when both have as many heads, else each side's mean over its heads
(a student narrower than its teacher rarely keeps the head count). Hidden states are zeroed on
padding on both sides, so the mean squared errors count only real tokens' errors (and the padding
pairs' zeros).

Keras' `FeatureDistillation` computes each loss; what it lacks is features of subclassed models
(its extraction builds functional sub-models by layer name), so the distiller
(`model.distill.losses.CachedDistiller`) extracts the features itself, named as
`feature_names`, and `NamedFeatureDistillation` skips the layer-name check."""

from __future__ import annotations

import math
from dataclasses import dataclass

import keras
from keras import ops


def matched_applications(student_layers: int, teacher_layers: int) -> list[tuple[int, int]]:
    """`[(student application l, teacher application m)]` for every l of the student's
    (module docstring)."""
    return [
        (layer, math.ceil((layer + 1) * teacher_layers / student_layers) - 1)
        for layer in range(student_layers)
    ]


def feature_names(student_layers: int, teacher_layers: int) -> list[tuple[str, str]]:
    """`[(student feature, teacher feature)]`: `hidden_0` with `hidden_0`, then each matched
    application's output state `hidden_{l+1}` and scores `attention_{l}`."""
    pairs = matched_applications(student_layers, teacher_layers)
    hidden = [("hidden_0", "hidden_0")] + [(f"hidden_{s + 1}", f"hidden_{t + 1}") for s, t in pairs]
    return hidden + [(f"attention_{s}", f"attention_{t}") for s, t in pairs]


class NamedFeatureDistillation(keras.distillation.FeatureDistillation):
    """`FeatureDistillation` (mean squared error) between features the distiller extracts and
    names (`feature_names`), not layers of functional models: the layer check is skipped."""

    def validate_model_compatibility(self, teacher, student):
        return None


@dataclass(frozen=True)
class LayerMatching:
    """The intermediate losses of a student of `student_layers` applications, `student_heads`
    heads and hidden width `student_width` against a teacher of `teacher_layers`,
    `teacher_heads` and `teacher_width`: each hidden-state pair weighs `hidden_weight`, each
    attention pair `attention_weight` (a weight of 0 leaves its pairs out)."""

    student_layers: int
    teacher_layers: int
    student_heads: int
    teacher_heads: int
    student_width: int
    teacher_width: int
    hidden_weight: float
    attention_weight: float

    @classmethod
    def between(cls, student, teacher, hidden_weight: float, attention_weight: float):
        """The matching of two `AlbertConfig`s (the student's and the teacher's backbones')."""
        return cls(
            student.num_hidden_layers,
            teacher.num_hidden_layers,
            student.num_attention_heads,
            teacher.num_attention_heads,
            student.hidden_size,
            teacher.hidden_size,
            hidden_weight,
            attention_weight,
        )

    def pairs(self) -> list[tuple[str, str]]:
        weights = {"hidden": self.hidden_weight, "attention": self.attention_weight}
        names = feature_names(self.student_layers, self.teacher_layers)
        return [(s, t) for s, t in names if weights[s.split("_")[0]] > 0]

    def losses(self) -> tuple[list[NamedFeatureDistillation], list[float]]:
        """The intermediate distillation losses, one a pair, and their weights."""
        pairs = self.pairs()
        losses = [NamedFeatureDistillation("mse", t, s) for s, t in pairs]
        weights = [
            self.hidden_weight if s.startswith("hidden") else self.attention_weight
            for s, _ in pairs
        ]
        return losses, weights

    def features(self, outputs: dict, side: str, projection=None) -> dict:
        """`{name: feature}` of one side (`"student"` or `"teacher"`) from its backbone's outputs
        (`FinetuneModel.call_with_outputs(..., intermediate=True)`); the student's hidden states
        go through `projection` (None: the widths agree)."""
        index = 0 if side == "student" else 1
        wanted = {pair[index] for pair in self.pairs()}
        mask = ops.cast(outputs["input_mask"], "float32")[:, :, None]
        per_head = self.student_heads == self.teacher_heads
        features = {}
        for name in wanted:
            kind, number = name.split("_")
            if kind == "hidden":
                state = ops.cast(outputs["hidden_states"][int(number)], "float32")
                if projection is not None:
                    state = projection(state)
                features[name] = state * mask
            else:
                scores = outputs["attention_scores"][int(number)] * mask[:, None]  # queries
                features[name] = scores if per_head else ops.mean(scores, axis=1)
        return features
