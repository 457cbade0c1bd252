"""Score prediction files against gold files with the official metrics (the formats
`model.finetune` writes; see `model.evaluation.evaluate`). A prediction file that covers none of the
gold examples is an error naming it; partial coverage and ids not in the gold file are warned about
and counted in the scores."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from typing import Any

from albert.errors import StageError
from albert.fs import open_file
from albert.race_json import ANSWER_LETTERS, read_race
from albert.squad_json import gold_answers, is_v2
from model.tasks.metrics import race_accuracy, squad_v1_scores, squad_v2_scores
from model.tasks.task import Task

logger = logging.getLogger(__name__)

OFFICIAL_NA_PROB_THRESHOLD = 1.0  # the SQuAD v2.0 evaluation script's --na-prob-thresh default


def read_json(path: str):
    with open_file(path, "rb") as handle:
        return json.loads(handle.read().decode("utf-8"))


def score_labelled(
    task: Task,
    gold: dict[str, Any],
    gold_path: str,
    predictions_path: str,
    parse: Callable[[str], Any],
) -> dict:
    """The task's metrics of a `predictions.tsv` (`index`, then the prediction as `parse` reads
    it: ValueError for a bad one) against `gold` (example id -> label, read from `gold_path`)."""
    if not gold:
        raise StageError(
            f"{gold_path}: no examples to score (the file is empty or has only a header)"
        )
    predicted = {}
    with open_file(predictions_path, "r") as handle:
        for line_number, line in enumerate(handle, start=1):
            fields = line.rstrip("\n").split("\t")
            if line_number == 1 and fields[0] == "index":
                continue
            if len(fields) != 2:
                raise StageError(
                    f"{predictions_path}:{line_number}: expected 'index<TAB>prediction'"
                )
            try:
                predicted[fields[0]] = parse(fields[1])
            except ValueError:
                raise StageError(
                    f"{predictions_path}:{line_number}: bad prediction {fields[1]!r}"
                ) from None
    missing = [guid for guid in gold if guid not in predicted]
    if missing:
        raise StageError(
            f"{predictions_path}: no prediction for {len(missing)} examples (e.g. {missing[0]!r})"
        )
    guids = list(gold)
    return {
        **task.metrics([predicted[g] for g in guids], [gold[g] for g in guids]),
        "unknown_predictions": count_unknown(gold, predicted, predictions_path, gold_path),
    }


def score_squad(
    gold_path: str, predictions_path: str, na_probs_path: str | None, threshold: float | None
) -> dict:
    gold = gold_answers(gold_path)
    if not gold:
        raise StageError(f"{gold_path}: no questions to score")
    predictions = read_json(predictions_path)
    if not isinstance(predictions, dict):
        raise StageError(f"{predictions_path}: expected a JSON object {{question id: answer}}")
    unknown = count_unknown(gold, predictions, predictions_path, gold_path)
    coverage = {
        **prediction_coverage(gold, predictions, predictions_path),
        "unknown_predictions": unknown,
    }
    if not is_v2(gold_path):
        return {**squad_v1_scores(gold, predictions), **coverage}
    na_probs = read_json(na_probs_path) if na_probs_path else None
    return {
        **squad_v2_scores(
            gold,
            predictions,
            na_probs,
            OFFICIAL_NA_PROB_THRESHOLD if threshold is None else threshold,
        ),
        **coverage,
    }


def score_race(gold_dir: str, predictions_path: str) -> dict:
    examples = list(read_race(gold_dir))
    if not examples:
        raise StageError(f"{gold_dir}: no questions to score")
    predicted = {}
    with open_file(predictions_path, "r") as handle:
        for line_number, line in enumerate(handle, start=1):
            if line.strip():
                record = json.loads(line)
                if record.get("answer") not in tuple(ANSWER_LETTERS):
                    raise StageError(f"{predictions_path}:{line_number}: answer must be one of A-D")
                predicted[record["id"]] = ANSWER_LETTERS.index(record["answer"])
    missing = [e.example_id for e in examples if e.example_id not in predicted]
    if missing:
        raise StageError(
            f"{predictions_path}: no prediction for {len(missing)} questions (e.g. {missing[0]!r})"
        )
    gold = {e.example_id: e for e in examples}
    scores = race_accuracy(
        [e.level for e in examples],
        [predicted[e.example_id] for e in examples],
        [e.label for e in examples],
    )
    unknown = count_unknown(gold, predicted, predictions_path, gold_dir)
    return {**scores, "unknown_predictions": unknown}


def prediction_coverage(gold: dict, predictions: dict, predictions_path: str) -> dict[str, int]:
    """How many gold questions have a prediction. None is an error (the wrong file); some missing is
    reported: a warning and `missing_predictions` in the scores (they score as unanswered)."""
    predicted = sum(1 for qid in gold if qid in predictions)
    if not predicted:
        raise StageError(
            f"{predictions_path}: none of the {len(gold)} gold questions has a prediction"
        )
    missing = len(gold) - predicted
    if missing:
        logger.warning(
            "%s: PARTIAL predictions: %d of %d questions have none (scored as unanswered)",
            predictions_path,
            missing,
            len(gold),
        )
    return {"predicted": predicted, "missing_predictions": missing}


def count_unknown(gold: dict, predictions: dict, predictions_path: str, gold_path: str) -> int:
    """How many predictions have an id that is not in the gold file: they are not scored, and a
    warning names the predictions file (the wrong gold file, or predictions of another split)."""
    unknown = [key for key in predictions if key not in gold]
    if unknown:
        logger.warning(
            "%s: %d of %d predictions have an id that is not in %s (e.g. %r); not scored",
            predictions_path,
            len(unknown),
            len(predictions),
            gold_path,
            unknown[0],
        )
    return len(unknown)
