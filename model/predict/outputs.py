"""A fine-tuned model's outputs -> one prediction per input row, one function per task kind
(`model.predict.kinds`).

Scores are rounded to `DECIMALS` decimals: the same row gives the same bytes whatever its batch
(a batch's size and padding move a float's last bits, not its sixth decimal in practice).

- classification: `{"label", "score", "top_k": [{"label", "score"}, ...]}` (softmax; with windows
  the mean of the windows' probabilities);
- multi_label: `{"labels": [the labels whose sigmoid is at least the threshold], "scores": {label:
  score}}`;
- regression: `{"value"}` (with windows, the windows' mean);
- span: `{"answer", "start", "end", "score", ("null_score_diff")}`: the best span's text, its
  character offsets in the context (`context[start:end]` is the predicted span, wherever the same
  text occurs before it), its probability among the n best; SQuAD v2 answers "" when the null
  score wins by more than the tuned threshold (a task with unanswerable questions);
- multiple_choice: `{"choice", "answer", "score", "scores"}`: the option's letter, its text, its
  probability and every option's.
"""

from __future__ import annotations

import numpy as np

from model.predict.encoding import Encoded
from model.predict.task_info import TaskInfo
from model.tasks import squad_decode

DECIMALS = 6


def _round(value) -> float:
    return round(float(value), DECIMALS)


def softmax(logits: np.ndarray) -> np.ndarray:
    logits = np.asarray(logits, dtype=np.float64)
    shifted = np.exp(logits - logits.max(axis=-1, keepdims=True))
    return shifted / shifted.sum(axis=-1, keepdims=True)


def per_row(values: np.ndarray, owners: np.ndarray, rows: int) -> np.ndarray:
    """The mean of each input row's model rows (windows)."""
    totals = np.zeros((rows, *values.shape[1:]), dtype=np.float64)
    np.add.at(totals, owners, values)
    counts = np.bincount(owners, minlength=rows).reshape(-1, *([1] * (values.ndim - 1)))
    return totals / counts


def class_predictions(info: TaskInfo, encoded: Encoded, outputs, texts, top_k: int) -> list[dict]:
    """Classification: the `top_k` labels of each row by softmax (its windows' mean)."""
    probabilities = per_row(softmax(outputs), encoded.owners, len(texts))
    return [_classes(info, p, top_k) for p in probabilities]


def score_predictions(info: TaskInfo, encoded: Encoded, outputs, texts, top_k: int) -> list[dict]:
    """Regression: each row's value (its windows' mean)."""
    values = per_row(np.asarray(outputs, dtype=np.float64)[:, :1], encoded.owners, len(texts))
    return [{"value": _round(v[0])} for v in values]


def label_set_predictions(
    info: TaskInfo, encoded: Encoded, outputs, texts, top_k: int
) -> list[dict]:
    """Multi-label: each row's labels at or above the threshold, and every label's sigmoid."""
    scores = 1.0 / (1.0 + np.exp(-np.asarray(outputs, dtype=np.float64)))
    return [_labels(info, row) for row in per_row(scores, encoded.owners, len(texts))]


def choice_predictions(info: TaskInfo, encoded: Encoded, outputs, texts, top_k: int) -> list[dict]:
    """Multiple choice: each row's best option and every option's probability."""
    probabilities = per_row(softmax(outputs), encoded.owners, len(texts))
    return [_choice(info, p, t["choices"]) for p, t in zip(probabilities, texts)]


def _classes(info: TaskInfo, probabilities: np.ndarray, top_k: int) -> dict:
    order = np.argsort(-probabilities, kind="stable")
    best = [{"label": info.labels[i], "score": _round(probabilities[i])} for i in order[:top_k]]
    return {**best[0], "top_k": best}


def _labels(info: TaskInfo, scores: np.ndarray) -> dict:
    return {
        "labels": [name for name, s in zip(info.labels, scores) if s >= info.label_threshold],
        "scores": {name: _round(s) for name, s in zip(info.labels, scores)},
    }


def _choice(info: TaskInfo, probabilities: np.ndarray, options: list[str]) -> dict:
    best = int(np.argmax(probabilities))
    return {
        "choice": info.labels[best],
        "answer": options[best],
        "score": _round(probabilities[best]),
        "scores": [_round(p) for p in probabilities],
    }


def span_predictions(info: TaskInfo, encoded: Encoded, outputs, texts, top_k: int) -> list[dict]:
    """Span: each row's best answer (none where the task's questions may have none and the null
    score wins by more than the tuned threshold)."""
    aligned, features = encoded.squad
    decoded = squad_decode.decode(
        aligned,
        features,
        np.asarray(outputs["start_logits"]),
        np.asarray(outputs["end_logits"]),
        info.n_best_size,
        info.max_answer_length,
    )
    answers = decoded.final(info.threshold if info.unanswerable else None)
    result = []
    for item in aligned:
        qid = item.example.qas_id
        nbest = decoded.nbest[qid]
        answer = answers[qid]
        best = nbest[0] if nbest and answer else None
        prediction = {
            "answer": answer,
            "start": best.start if best else None,
            "end": best.end if best else None,
            "score": _round(softmax([p.score for p in nbest])[0]) if best else 0.0,
        }
        if info.unanswerable:
            prediction["null_score_diff"] = _round(decoded.null_score_diff[qid])
        result.append(prediction)
    return result
