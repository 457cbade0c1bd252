"""RACE (four-way multiple choice): one `[CLS] article [SEP] question+option [SEP]` row per option,
accuracy overall and per level, `predictions.jsonl` (`{"id": "middle/13-0", "answer": "A"}`)."""

from __future__ import annotations

import json

import keras
import numpy as np

from albert.fs import join, open_file
from albert.race_json import ANSWER_LETTERS
from model.finetune.kind import TaskKind
from model.network.heads import MultipleChoiceHead
from model.tasks.metrics import race_accuracy
from model.tasks.scoring import score_race


class RaceKind(TaskKind):
    empty_reason = "it holds no questions"
    hf_architecture = "AlbertForMultipleChoice"

    @classmethod
    def head(cls, backbone_config, head_config, num_labels):
        """One score per choice over its features."""
        return MultipleChoiceHead(head_config, name="choice_head")

    @classmethod
    def model_rows(cls, inputs):
        """`[B, C, T]` -> `[B * C, T]`: one backbone row per choice."""
        length = keras.ops.shape(inputs["input_ids"])[-1]
        return {k: keras.ops.reshape(v, (-1, length)) for k, v in inputs.items()}

    @classmethod
    def head_outputs(cls, model, outputs, inputs, shape, training):
        pooled = model.pool(outputs, inputs["input_mask"])
        return model.head(pooled, num_choices=shape[1], training=training)

    def texts(self, examples):
        return [e.article.split("\n") for e in {e.article: e for e in examples}.values()]

    def loss(self):
        return keras.losses.SparseCategoricalCrossentropy(from_logits=True)

    def score(self, model, data, batch_size):
        predictions = np.argmax(self.predict(model, data, batch_size), axis=-1)
        levels = [e.level for e in data.dev_examples]
        return race_accuracy(levels, predictions, data.dev["labels"]), predictions

    def write_predictions(self, directory, data, predictions):
        path = join(directory, "predictions.jsonl")
        with open_file(path, "w") as handle:
            for example, prediction in zip(data.dev_examples, predictions):
                answer = ANSWER_LETTERS[int(prediction)]
                handle.write(json.dumps({"id": example.example_id, "answer": answer}) + "\n")
        return path

    def score_files(self, gold, predictions, na_probs=None, threshold=None):
        return score_race(gold, predictions)
