"""A multi-label task (a user's): one sigmoid per label with binary cross-entropy; a label is
predicted when its probability reaches the decision threshold, tuned on the dev set for micro-F1
and reported with the scores (`threshold`); `predictions.tsv` writes each row's labels joined by
commas."""

from __future__ import annotations

import keras
import numpy as np

from model.finetune.glue import GlueKind
from model.tasks.own_task import multi_label_scores


class MultiLabelKind(GlueKind):
    problem_type = "multi_label_classification"

    def loss(self):
        return keras.losses.BinaryCrossentropy(from_logits=True)

    def soft_target_loss(self, temperature):
        """Each label's own sigmoid has no shared distribution: the target is the teacher's
        logits (squared error, T = 1)."""
        return keras.distillation.LogitsDistillation(1.0, keras.losses.MeanSquaredError())

    def score(self, model, data, batch_size):
        logits = np.asarray(self.predict(model, data, batch_size), np.float64)
        probabilities, gold = 1 / (1 + np.exp(-logits)), data.dev["labels"]
        return multi_label_scores(probabilities, gold)

    def prediction_text(self, prediction) -> str:
        return ",".join(name for name, on in zip(self.labels, prediction) if on)

    def prediction_value(self, text: str):
        """A row's labels joined by commas -> its multi-hot row (ValueError: an unknown label)."""
        return self.gold_value([self.labels.index(name) for name in text.split(",") if name])

    def gold_value(self, label):
        """A row's label indices -> its multi-hot row."""
        row = np.zeros(len(self.labels), bool)
        row[list(label)] = True
        return row
