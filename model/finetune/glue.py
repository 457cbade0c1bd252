"""GLUE tasks: TSV rows -> `[CLS] a [SEP] (b [SEP])`, class logits (`GlueKind`) or the STS-B score
(`GlueRegressionKind`), the GLUE metrics, `predictions.tsv` (`index`, then the label as in the
task's files, or the score)."""

from __future__ import annotations

import keras
import numpy as np

from albert.fs import join, open_file
from model.finetune.kind import TaskKind
from model.tasks import Task
from model.tasks.scoring import score_labelled
from model.tasks.splits import SplitSettings, read_examples


class GlueKind(TaskKind):
    """A classification task (GLUE's, a user's): softmax cross-entropy, the argmax class, written
    as the label in its files."""

    hf_architecture = "AlbertForSequenceClassification"
    problem_type = "single_label_classification"

    def __init__(self, spec: Task):
        super().__init__(spec)
        self.labels = spec.labels

    def texts(self, examples):
        return [[e.text_a, e.text_b] for e in examples]

    def loss(self):
        return keras.losses.SparseCategoricalCrossentropy(from_logits=True)

    def predictions(self, outputs):
        """The model's outputs -> one prediction per example."""
        return np.argmax(outputs, axis=-1)

    def prediction_text(self, prediction) -> str:
        """One prediction as `predictions.tsv` writes it."""
        return self.labels[int(prediction)]

    def prediction_value(self, text: str):
        """A `predictions.tsv` prediction as the metrics take it (ValueError: not one)."""
        return self.labels.index(text)

    def gold_value(self, label):
        """A gold example's label as the metrics take it."""
        return label

    def score(self, model, data, batch_size):
        predictions = self.predictions(self.predict(model, data, batch_size))
        return self.spec.metrics(predictions, data.dev["labels"]), predictions

    def write_predictions(self, directory, data, predictions):
        path = join(directory, "predictions.tsv")
        with open_file(path, "w") as handle:
            handle.write("index\tprediction\n")
            for example, prediction in zip(data.dev_examples, predictions):
                handle.write(f"{example.guid}\t{self.prediction_text(prediction)}\n")
        return path

    def score_files(self, gold, predictions, na_probs=None, threshold=None):
        """`predictions.tsv` against the examples the task's `Format` reads from `gold` (a user's
        task: its dev set, `model.evaluation.evaluate` naming `gold` its dev file)."""
        split = gold.rstrip("/").rsplit("/", 1)[-1].split(".")[0]  # GLUE: the file's layout
        split = "dev" if self.spec.source is not None else split  # a user's: its dev set
        settings = SplitSettings(self.spec.name, gold, split, "", 0, task_source=self.spec.source)
        examples = {e.guid: self.gold_value(e.label) for e in read_examples(settings)}
        return score_labelled(self.spec, examples, gold, predictions, self.prediction_value)


class GlueRegressionKind(GlueKind):
    """A score (STS-B's, a user's): one per row, squared error, written with six decimals."""

    problem_type = "regression"

    def loss(self):
        return lambda y, p: keras.ops.square(
            keras.ops.cast(keras.ops.reshape(y, (-1,)), "float32") - p[:, 0]
        )

    def predictions(self, outputs):
        return outputs[:, 0]

    def soft_target_loss(self, temperature):
        """One score has no distribution: the target is the teacher's score (squared error,
        T = 1)."""
        return keras.distillation.LogitsDistillation(1.0, keras.losses.MeanSquaredError())

    def prediction_text(self, prediction) -> str:
        return f"{float(prediction):.6f}"

    def prediction_value(self, text: str):
        return float(text)
