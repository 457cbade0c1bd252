"""SQuAD v1.1 / v2.0 (span extraction): document-stride windows, start/end logits, n-best decoding,
the official scores, `predictions.json` (`{id: answer}`) and `null_odds.json`. For v2, a share of
the training articles is held out of training to tune the no-answer threshold on."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import keras

from albert.errors import StageError
from albert.fs import join, open_file
from albert.squad_json import gold_of
from model.finetune.kind import TaskData, TaskKind, encoded, inputs_of, split_settings
from model.network.heads import SpanExtractionHead
from model.tasks import Task, squad_decode, squad_features
from model.tasks.metrics import squad_v1_scores, squad_v2_scores
from model.tasks.scoring import score_squad
from model.tasks.splits import encoded_examples, held_out, read_examples


@dataclass
class SquadData(TaskData):
    """TaskData plus the dev windows, the held-out training articles (v2) and the null threshold."""

    dev_aligned: list = None
    dev_features: list = None
    holdout: tuple | None = None  # (examples, aligned, features, arrays)
    threshold: float | None = None
    n_best_size: int = 20
    max_answer_length: int = 30


class SquadKind(TaskKind):
    empty_reason = "it holds no questions"
    null_odds_file = "null_odds.json"
    token_outputs = True
    hf_architecture = "AlbertForQuestionAnswering"

    def __init__(self, spec: Task):
        super().__init__(spec)
        self.v2 = spec.unanswerable  # questions without an answer: a tuned null threshold

    @classmethod
    def head(cls, backbone_config, head_config, num_labels):
        """Start and end logits over the tokens (the sequence output: no pooler, no features)."""
        return SpanExtractionHead(backbone_config, name="span_head")

    @classmethod
    def head_outputs(cls, model, outputs, inputs, shape, training):
        return model.head(outputs["sequence_output"], inputs["input_mask"])

    def read(self, config, tokenizer, hp, with_train, threshold):
        if config.max_query_length + 3 >= hp.max_seq_length:
            raise StageError(
                f"max_query_length {config.max_query_length} leaves no room for the context "
                f"in max_seq_length {hp.max_seq_length}"
            )
        counts: dict[str, Any] = {"train": {}, "dev": {}}
        train_path, dev_path = self.paths(config)
        window = {
            "max_seq_length": hp.max_seq_length,
            "doc_stride": config.doc_stride,
            "max_query_length": config.max_query_length,
        }
        # v2: articles held out of training to tune the null threshold on
        cut = int(config.threshold_holdout * 10_000) if self.v2 else 0
        settings = split_settings(config, hp, train_path, True, holdout_cut=cut)
        examples = read_examples(settings, counts["train"]) if with_train else []
        holdout = [e for e in examples if held_out(settings, e)]
        examples = encoded_examples(settings, examples)
        train = encoded(settings, tokenizer, examples, config, counts["train"])
        train["labels"] = {
            "start_logits": train.pop("start_positions"),
            "end_logits": train.pop("end_positions"),
        }
        dev_examples = read_examples(split_settings(config, hp, dev_path, False), counts["dev"])
        dev_aligned, dev_features = squad_features.prepare(
            tokenizer, dev_examples, False, counts=counts["dev"], **window
        )
        holdout_data = None
        if holdout:
            counts["holdout"] = {}
            aligned, features = squad_features.prepare(
                tokenizer, holdout, False, counts=counts["holdout"], **window
            )
            holdout_data = (holdout, aligned, features, squad_features.features_to_arrays(features))
        return SquadData(
            train_path,
            dev_path,
            train,
            squad_features.features_to_arrays(dev_features),
            dev_examples,
            self.texts(examples),
            counts,
            dev_aligned,
            dev_features,
            holdout_data,
            threshold,
            config.n_best_size,
            config.max_answer_length,
        )

    def texts(self, examples):
        return [[context] for context in dict.fromkeys(e.context for e in examples)]

    def loss(self):
        sce = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
        return {"start_logits": sce, "end_logits": sce}

    def soft_target_loss(self, temperature):
        """T^2 * KL at temperature T over the start and the end position logits."""
        kl = {name: keras.losses.KLDivergence() for name in ("start_logits", "end_logits")}
        return keras.distillation.LogitsDistillation(temperature, kl)

    def score(self, model, data: SquadData, batch_size):
        decoded = decode(
            data, data.dev_aligned, data.dev_features, self.predict(model, data, batch_size)
        )
        gold = gold_of(data.dev_examples)
        if not self.v2:
            scores = squad_v1_scores(gold, decoded.final(None))
            return {**scores, "exact": scores["exact_match"]}, (decoded, None)
        threshold = data.threshold or 0.0
        if data.holdout is not None:
            examples, aligned, features, arrays = data.holdout
            outputs = model.predict(inputs_of(arrays), batch_size=batch_size, verbose=0)
            held = decode(data, aligned, features, outputs)
            threshold = squad_v2_scores(gold_of(examples), held.answers, held.null_score_diff)[
                "best_f1_thresh"
            ]
        scores = squad_v2_scores(gold, decoded.answers, decoded.null_score_diff, threshold)
        scores["threshold_tuned_on_train_holdout"] = threshold
        return scores, (decoded, threshold)

    def write_predictions(self, directory, data, predictions):
        decoded, threshold = predictions
        path = join(directory, "predictions.json")
        with open_file(path, "w") as handle:
            json.dump(decoded.final(threshold), handle, indent=1, sort_keys=True)
        with open_file(join(directory, self.null_odds_file), "w") as handle:
            json.dump(decoded.null_score_diff, handle, indent=1, sort_keys=True)
        return path

    def score_files(self, gold, predictions, na_probs=None, threshold=None):
        return score_squad(gold, predictions, na_probs, threshold)


def decode(data: SquadData, aligned, features, outputs) -> squad_decode.DecodedPredictions:
    return squad_decode.decode(
        aligned,
        features,
        outputs["start_logits"],
        outputs["end_logits"],
        data.n_best_size,
        data.max_answer_length,
    )
