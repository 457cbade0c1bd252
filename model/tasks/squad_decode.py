"""SQuAD span decoding: n-best answers over all document windows of each question (the reference's
`write_predictions`), mapped back to the original characters of the context, and the null-score
difference that SQuAD v2 thresholds."""

from __future__ import annotations

import collections
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from model.tasks.squad_features import AlignedExample, SquadFeature


@dataclass
class SpanPrediction:
    """One candidate answer: its text, `context[start:end]` (character offsets in the context)."""

    text: str
    score: float
    start_logit: float
    end_logit: float
    start: int
    end: int


@dataclass
class DecodedPredictions:
    answers: dict[str, str] = field(default_factory=dict)  # best non-null answer per question
    null_score_diff: dict[str, float] = field(default_factory=dict)  # null score - best span score
    nbest: dict[str, list[SpanPrediction]] = field(default_factory=dict)

    def final(self, threshold: float | None) -> dict[str, str]:
        """Answers with "" where the null score beats the best span by more than `threshold`
        (None: never predict no-answer, as for SQuAD v1.1)."""
        if threshold is None:
            return dict(self.answers)
        return {
            q: "" if self.null_score_diff[q] > threshold else a for q, a in self.answers.items()
        }


NO_SPAN_DIFF = 1e9  # null-score difference of a question without any valid span


def decode(
    aligned: Sequence[AlignedExample],
    features: Sequence[SquadFeature],
    start_logits: np.ndarray,
    end_logits: np.ndarray,
    n_best_size: int = 20,
    max_answer_length: int = 30,
) -> DecodedPredictions:
    """n-best span decoding over all windows of each question (reference `write_predictions`)."""
    by_example: dict[int, list[int]] = collections.defaultdict(list)
    for index, feature in enumerate(features):
        by_example[feature.example_index].append(index)
    result = DecodedPredictions()
    for example_index, item in enumerate(aligned):
        candidates: list[tuple[float, int, int, int]] = []
        null_score = None
        for feature_index in by_example.get(example_index, []):
            feature = features[feature_index]
            starts, ends = start_logits[feature_index], end_logits[feature_index]
            feature_null = float(starts[0] + ends[0])
            null_score = feature_null if null_score is None else min(null_score, feature_null)
            top_starts = np.argsort(-starts, kind="stable")[:n_best_size]
            top_ends = np.argsort(-ends, kind="stable")[:n_best_size]
            for s in top_starts:
                if feature.token_to_piece[s] < 0 or not feature.is_max_context[s]:
                    continue
                for e in top_ends:
                    if feature.token_to_piece[e] < 0 or e < s or e - s + 1 > max_answer_length:
                        continue
                    candidates.append((float(starts[s] + ends[e]), feature_index, int(s), int(e)))
        candidates.sort(key=lambda c: -c[0])
        nbest, seen = [], set()
        for score, feature_index, s, e in candidates:
            feature = features[feature_index]
            first, last = feature.token_to_piece[s], feature.token_to_piece[e]
            start, end = item.context.spans[first][0], item.context.spans[last][1]
            text = item.context.text[start:end]
            if text in seen:
                continue
            seen.add(text)
            nbest.append(
                SpanPrediction(
                    text,
                    score,
                    float(start_logits[feature_index][s]),
                    float(end_logits[feature_index][e]),
                    start,
                    end,
                )
            )
            if len(nbest) >= n_best_size:
                break
        qid = item.example.qas_id
        result.nbest[qid] = nbest
        result.answers[qid] = nbest[0].text if nbest else ""
        if nbest and null_score is not None:
            result.null_score_diff[qid] = null_score - nbest[0].score
        else:
            result.null_score_diff[qid] = NO_SPAN_DIFF
    return result
