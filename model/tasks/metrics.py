"""Task metrics as officially defined (GLUE, the SQuAD v1.1/v2.0 evaluation scripts, RACE).

GLUE's correlations and classification scores are SciPy's and scikit-learn's (as GLUE's own
evaluation computes them); SQuAD and RACE follow the official scripts, checked on hand-worked cases.
"""

from __future__ import annotations

import collections
import re
import string
import warnings
from collections.abc import Mapping, Sequence

import numpy as np
from scipy import stats
from sklearn import metrics as sklearn_metrics

# ---------------------------------------------------------------------------------------- GLUE


def accuracy(predictions: Sequence[int], labels: Sequence[int]) -> float:
    predictions, labels = np.asarray(predictions), np.asarray(labels)
    return float(np.mean(predictions == labels)) if len(labels) else 0.0


def binary_f1(predictions: Sequence[int], labels: Sequence[int], positive: int = 1) -> float:
    """F1 of the positive class (GLUE's MRPC and QQP F1); 0 when there are no true positives."""
    return float(
        sklearn_metrics.f1_score(
            labels, predictions, pos_label=positive, average="binary", zero_division=0.0
        )
    )


def matthews_corrcoef(predictions: Sequence[int], labels: Sequence[int]) -> float:
    """Matthews correlation of two label sequences (multi-class form; 0 when undefined)."""
    return float(sklearn_metrics.matthews_corrcoef(labels, predictions))


def _defined(value: float) -> float:
    """SciPy's correlation of a constant input is NaN (with a warning); we report 0, no correlation,
    so that scores stay comparable for model selection and valid JSON."""
    return 0.0 if np.isnan(value) else float(value)


def pearson(x: Sequence[float], y: Sequence[float]) -> float:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", stats.ConstantInputWarning)
        return _defined(stats.pearsonr(np.asarray(x, np.float64), np.asarray(y, np.float64))[0])


def spearman(x: Sequence[float], y: Sequence[float]) -> float:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", stats.ConstantInputWarning)
        return _defined(stats.spearmanr(np.asarray(x, np.float64), np.asarray(y, np.float64))[0])


def macro_f1(predictions: Sequence[int], labels: Sequence[int]) -> float:
    """The unweighted mean of the classes' F1 (a class never predicted scores 0)."""
    return float(sklearn_metrics.f1_score(labels, predictions, average="macro", zero_division=0.0))


def set_f1(predictions: np.ndarray, labels: np.ndarray, average: str) -> float:
    """F1 of multi-hot rows (multi-label), `average` 'micro' or 'macro' (scikit-learn's)."""
    gold, predicted = np.asarray(labels, int), np.asarray(predictions, int)
    return float(sklearn_metrics.f1_score(gold, predicted, average=average, zero_division=0.0))


# The decision thresholds a multi-label task tries: 0.05, 0.10, ..., 0.95.
MULTI_LABEL_THRESHOLDS = np.round(np.arange(1, 20) * 0.05, 2)


def tuned_threshold(probabilities: np.ndarray, labels: np.ndarray, score) -> float:
    """The threshold of `MULTI_LABEL_THRESHOLDS` at which `score(probabilities >= t, labels)`
    (e.g. micro-F1) is highest; of equal scores, the lowest threshold."""
    scored = [(score(probabilities >= t, labels), -t) for t in MULTI_LABEL_THRESHOLDS]
    return float(-max(scored)[1])


def per_label(predictions: np.ndarray, labels: np.ndarray, names: Sequence[str]) -> dict:
    """`{"per_label": {name: {precision, recall, f1, support}}}` of multi-hot rows."""
    scores = sklearn_metrics.precision_recall_fscore_support(
        np.asarray(labels, int), np.asarray(predictions, int), zero_division=0.0
    )
    return {"per_label": _named_scores(scores, names)}


def _named_scores(scores: tuple, names: Sequence[str]) -> dict[str, dict]:
    """scikit-learn's (precision, recall, f1, support) arrays as `{name: {precision, recall, f1,
    support}}`, the i-th name for the i-th entry."""
    precision, recall, f1, support = scores
    return {
        name: {
            "precision": float(precision[i]),
            "recall": float(recall[i]),
            "f1": float(f1[i]),
            "support": int(support[i]),
        }
        for i, name in enumerate(names)
    }


def mean_squared_error(predictions: Sequence[float], labels: Sequence[float]) -> float:
    return float(sklearn_metrics.mean_squared_error(labels, predictions))


def per_class(
    predictions: Sequence[int], labels: Sequence[int], names: Sequence[str]
) -> dict[str, object]:
    """`{"per_class": {name: {precision, recall, f1, support}}, "confusion_matrix": rows of
    gold classes, columns of predicted ones, in the order of `names`}` (scikit-learn's)."""
    indices = list(range(len(names)))
    scores = sklearn_metrics.precision_recall_fscore_support(
        labels, predictions, labels=indices, zero_division=0.0
    )
    table = _named_scores(scores, names)
    matrix = sklearn_metrics.confusion_matrix(labels, predictions, labels=indices)
    return {"per_class": table, "confusion_matrix": matrix.tolist()}


# ---------------------------------------------------------------------------------------- SQuAD


def normalize_answer(text: str) -> str:
    """Lower text and remove punctuation, articles and extra whitespace (official SQuAD script)."""
    text = text.lower()
    text = "".join(ch for ch in text if ch not in set(string.punctuation))
    text = re.sub(r"\b(a|an|the)\b", " ", text)
    return " ".join(text.split())


def exact_match(prediction: str, gold: str) -> int:
    return int(normalize_answer(prediction) == normalize_answer(gold))


def token_f1(prediction: str, gold: str, v2: bool = True) -> float:
    """Token-overlap F1. The v2.0 script scores two empty answers 1 (and empty vs non-empty 0); the
    v1.1 script scores any answer without common tokens 0."""
    pred_tokens, gold_tokens = normalize_answer(prediction).split(), normalize_answer(gold).split()
    if v2 and (not pred_tokens or not gold_tokens):
        return float(pred_tokens == gold_tokens)
    common = collections.Counter(pred_tokens) & collections.Counter(gold_tokens)
    num_same = sum(common.values())
    if num_same == 0:
        return 0.0
    precision, recall = num_same / len(pred_tokens), num_same / len(gold_tokens)
    return 2 * precision * recall / (precision + recall)


def squad_v1_scores(
    gold: Mapping[str, Sequence[str]], predictions: Mapping[str, str]
) -> dict[str, float]:
    """The official v1.1 evaluation: max over gold answers, in percent; unanswered questions
    score 0."""
    em = f1 = 0.0
    for qid, answers in gold.items():
        if qid not in predictions:
            continue
        em += max(exact_match(predictions[qid], a) for a in answers)
        f1 += max(token_f1(predictions[qid], a, v2=False) for a in answers)
    total = len(gold)
    return {
        "exact_match": 100.0 * em / total,
        "f1": 100.0 * f1 / total,
        "total": total,
        "answered": sum(1 for qid in gold if qid in predictions),
    }


def _v2_raw_scores(gold, predictions):
    exact, f1 = {}, {}
    for qid, answers in gold.items():
        answers = [a for a in answers if normalize_answer(a)] or [""]
        prediction = predictions.get(qid, "")
        exact[qid] = max(exact_match(prediction, a) for a in answers)
        f1[qid] = max(token_f1(prediction, a) for a in answers)
    return exact, f1


def _apply_threshold(scores, na_probs, has_answer, threshold):
    return {
        qid: (float(not has_answer[qid]) if na_probs.get(qid, 0.0) > threshold else score)
        for qid, score in scores.items()
    }


def best_threshold(
    predictions: Mapping[str, str],
    scores: Mapping[str, float],
    na_probs: Mapping[str, float],
    has_answer: Mapping[str, bool],
) -> tuple[float, float]:
    """The official v2.0 script's find_best_thresh: (best score in percent, its threshold)."""
    current = best = sum(1 for qid in scores if not has_answer[qid])
    threshold = 0.0
    for qid in sorted(na_probs, key=lambda k: na_probs[k]):
        if qid not in scores:
            continue
        if has_answer[qid]:
            diff = scores[qid]
        else:
            diff = -1 if predictions.get(qid) else 0
        current += diff
        if current > best:
            best, threshold = current, na_probs[qid]
    return 100.0 * best / len(scores), threshold


def squad_v2_scores(
    gold: Mapping[str, Sequence[str]],
    predictions: Mapping[str, str],
    na_probs: Mapping[str, float] | None = None,
    threshold: float = 1.0,
) -> dict[str, float]:
    """The official v2.0 evaluation: exact/f1 overall and on HasAns/NoAns, and the best threshold.

    `na_probs[qid]` is the no-answer score; a question is answered "" when it exceeds `threshold`.
    `best_exact`/`best_f1` and their thresholds are the dev oracle the official script reports.
    """
    na_probs = dict(na_probs) if na_probs is not None else {qid: 0.0 for qid in gold}
    has_answer = {qid: bool(answers) for qid, answers in gold.items()}
    exact_raw, f1_raw = _v2_raw_scores(gold, predictions)
    exact = _apply_threshold(exact_raw, na_probs, has_answer, threshold)
    f1 = _apply_threshold(f1_raw, na_probs, has_answer, threshold)
    total = len(gold)
    result: dict[str, float] = {
        "exact": 100.0 * sum(exact.values()) / total,
        "f1": 100.0 * sum(f1.values()) / total,
        "total": total,
    }
    for name, keep in (("HasAns", True), ("NoAns", False)):
        qids = [qid for qid in gold if has_answer[qid] == keep]
        if qids:
            result[f"{name}_exact"] = 100.0 * sum(exact[q] for q in qids) / len(qids)
            result[f"{name}_f1"] = 100.0 * sum(f1[q] for q in qids) / len(qids)
            result[f"{name}_total"] = len(qids)
    result["best_exact"], result["best_exact_thresh"] = best_threshold(
        predictions, exact_raw, na_probs, has_answer
    )
    result["best_f1"], result["best_f1_thresh"] = best_threshold(
        predictions, f1_raw, na_probs, has_answer
    )
    return result


# ---------------------------------------------------------------------------------------- RACE


def race_accuracy(
    levels: Sequence[str], predictions: Sequence[int], labels: Sequence[int]
) -> dict[str, float]:
    """Accuracy on RACE-middle, RACE-high and all of RACE (levels that are absent are left out)."""
    levels, predictions, labels = np.asarray(levels), np.asarray(predictions), np.asarray(labels)
    result = {"accuracy": accuracy(predictions, labels), "total": len(labels)}
    for level in ("middle", "high"):
        mask = levels == level
        if mask.any():
            result[f"accuracy_{level}"] = accuracy(predictions[mask], labels[mask])
            result[f"total_{level}"] = int(mask.sum())
    return result
