"""RACE (four-way multiple choice): one `[CLS] article [SEP] question+option [SEP]` row per option,
accuracy overall and per level, `predictions.jsonl` (`{"id": "middle/13-0", "answer": "A"}`)."""

from __future__ import annotations

import json

import keras
import numpy as np

from albert.fs import join, open_file
from model.finetune.kind import TaskData, TaskKind, first
from model.tasks.encode import encode_race
from model.tasks.metrics import race_accuracy
from model.tasks.race import ANSWER_LETTERS, read_race
from model.tasks.scoring import score_race


class RaceKind(TaskKind):
    empty_reason = "it holds no questions"

    def read(self, config, tokenizer, hp, with_train, threshold):
        train_path, dev_path = self.paths(config)
        train = first(list(read_race(train_path)), config.max_train_examples) if with_train else []
        dev_examples = first(list(read_race(dev_path)), config.max_dev_examples)

        def encode(examples):
            return encode_race(
                tokenizer, examples, hp.max_seq_length, config.truncation, config.head_tokens
            )

        texts = [e.article.split("\n") for e in {e.article: e for e in train}.values()]
        counts = {"train": {}, "dev": {}}
        return TaskData(
            train_path, dev_path, encode(train), encode(dev_examples), dev_examples, texts, counts
        )

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
