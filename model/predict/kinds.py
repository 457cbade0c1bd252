"""How a fine-tune of each task kind predicts (`PredictKind`): the texts a row gives the model,
their encoding (`model.predict.encoding`), how the model's outputs become predictions
(`model.predict.outputs`) and whether they are per token. `PREDICT_KINDS` is the one table of them,
by `Task.kind`; the rest of `model.predict` asks `predict_kind(info)`."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from model.predict import encoding, outputs
from model.predict.task_info import TaskInfo


@dataclass(frozen=True)
class PredictKind:
    """`roles(info)`: role -> how many texts a row gives; `encode(info, tokenizer, texts,
    windows, stride)`: the model inputs (`encoding.Encoded`); `predictions(info, encoded,
    outputs, texts, top_k)`: one prediction per row; `per_token`: the outputs are per token
    (SQuAD's start and end logits)."""

    roles: Callable[[TaskInfo], dict[str, int]]
    encode: Callable[..., encoding.Encoded]
    predictions: Callable[..., list[dict]]
    per_token: bool = False


def _text_roles(info: TaskInfo) -> dict[str, int]:
    return {"text": info.texts}


PREDICT_KINDS: dict[str, PredictKind] = {
    "classification": PredictKind(_text_roles, encoding.encode_text, outputs.class_predictions),
    "regression": PredictKind(_text_roles, encoding.encode_text, outputs.score_predictions),
    "multi_label": PredictKind(_text_roles, encoding.encode_text, outputs.label_set_predictions),
    "span": PredictKind(
        lambda info: {"question": 1, "context": 1},
        encoding.encode_spans,
        outputs.span_predictions,
        per_token=True,
    ),
    "multiple_choice": PredictKind(
        lambda info: {"context": 1, "question": 1, "choices": len(info.labels)},
        encoding.encode_choices,
        outputs.choice_predictions,
    ),
}


def predict_kind(info: TaskInfo) -> PredictKind:
    """How the fine-tune `info` describes predicts (its kind's `PredictKind`)."""
    return PREDICT_KINDS[info.kind]
