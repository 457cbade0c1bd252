"""Score predictions or a fine-tuned model on a task's dev data with the official metrics.

    python -m model.evaluate --task sst2 --gold glue/SST-2/dev.tsv --predictions run/predictions.tsv
    python -m model.evaluate --task squad2 --gold dev-v2.0.json --predictions predictions.json \
        --na-probs null_odds.json
    python -m model.evaluate --task sst2 --model runs/sst2 --gold glue/SST-2/dev.tsv

Prediction formats are those `model.finetune` writes: GLUE `predictions.tsv` (`index`, then the
label as in the task's files, or the STS-B score), SQuAD `predictions.json` (`{id: answer}`, with
`null_odds.json` (`--na-probs`) for the official v2 threshold sweep; a question then also scores as
unanswered when its null odds exceed `--threshold`, the official script's `--na-prob-thresh`, whose
default 1.0 applies when it is not given; with `--model` the threshold `model.finetune` tuned on its
held-out training articles is used), RACE `predictions.jsonl`
(`{"id": "middle/13-0", "answer": "A"}`). With `--model` (a `model.finetune` output directory),
the model predicts the gold file first.
"""

from __future__ import annotations

import json
import logging
import sys

from pydantic import Field

from albert.config import StageConfig
from albert.errors import StageError, naming
from albert.fs import exists, join, makedirs, open_file
from albert.stage import stage_main
from model.tasks import get_task
from model.tasks.glue import LABELS, read_glue
from model.tasks.metrics import glue_metrics, race_accuracy, squad_v1_scores, squad_v2_scores
from model.tasks.race import ANSWER_LETTERS, read_race
from model.tasks.squad import gold_answers, is_v2

logger = logging.getLogger(__name__)

OFFICIAL_NA_PROB_THRESHOLD = 1.0  # the SQuAD v2.0 evaluation script's --na-prob-thresh default


class EvaluateConfig(StageConfig):
    task: str = Field(description="task name (as model.finetune)")
    gold: str = Field(
        description="gold file: a GLUE dev TSV, a SQuAD JSON, or a RACE split directory"
    )
    predictions: str | None = Field(None, description="predictions file to score")
    model: str | None = Field(None, description="model.finetune output directory to predict with")
    na_probs: str | None = Field(None, description="SQuAD v2: null odds JSON {id: score}")
    threshold: float | None = Field(
        None,
        description="SQuAD v2: null odds above this mean 'no answer' "
        "(default: the official script's 1.0; with --model, the tuned one)",
    )
    output: str | None = Field(None, description="write the scores here as JSON")


def _read_json(path: str):
    with open_file(path, "rb") as handle:
        return json.loads(handle.read().decode("utf-8"))


def score_glue(task: str, gold_path: str, predictions_path: str) -> dict:
    split = gold_path.rsplit("/", 1)[-1].split(".")[0]
    gold = {e.guid: e.label for e in read_glue(task, gold_path, split)}
    if not gold:
        raise StageError(
            f"{gold_path}: no examples to score (the file is empty or has only a header)"
        )
    labels = LABELS[task]
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
                predicted[fields[0]] = (
                    float(fields[1]) if labels is None else labels.index(fields[1])
                )
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
        **glue_metrics(task, [predicted[g] for g in guids], [gold[g] for g in guids]),
        "unknown_predictions": count_unknown(gold, predicted, predictions_path, gold_path),
    }


def score_squad(
    gold_path: str, predictions_path: str, na_probs_path: str | None, threshold: float | None
) -> dict:
    gold = gold_answers(gold_path)
    if not gold:
        raise StageError(f"{gold_path}: no questions to score")
    predictions = _read_json(predictions_path)
    if not isinstance(predictions, dict):
        raise StageError(f"{predictions_path}: expected a JSON object {{question id: answer}}")
    unknown = count_unknown(gold, predictions, predictions_path, gold_path)
    coverage = {
        **prediction_coverage(gold, predictions, predictions_path),
        "unknown_predictions": unknown,
    }
    if not is_v2(gold_path):
        return {**squad_v1_scores(gold, predictions), **coverage}
    na_probs = _read_json(na_probs_path) if na_probs_path else None
    return {
        **squad_v2_scores(
            gold,
            predictions,
            na_probs,
            OFFICIAL_NA_PROB_THRESHOLD if threshold is None else threshold,
        ),
        **coverage,
    }


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


def predict_with_model(config: EvaluateConfig) -> tuple[str, str | None, float | None]:
    """Run a fine-tuned model (a model.finetune output) on the gold file; return the path of its
    predictions (and null odds), written under OUTPUT or the model directory's `eval/`."""
    import keras

    from albert.tokenization import AlbertTokenizer
    from model.finetune import FinetuneConfig, TaskData, write_predictions

    results = _read_json(join(config.model, "results.json"))
    finetune_config = FinetuneConfig(
        **{
            **results["config"],
            "dev_file": config.gold,
            "max_dev_examples": None,
            "multitask": [],
            "further_pretrain_steps": 0,
        }
    )
    spec = get_task(finetune_config.task)
    hp = results["hyperparameters"]
    data = TaskData(
        spec,
        finetune_config,
        AlbertTokenizer(finetune_config.spm_model),
        hp,
        with_train=False,
        threshold=results["dev"].get("threshold_tuned_on_train_holdout"),
    )
    model_path = join(config.model, "model.keras")
    with naming(model_path):  # e.g. Keras refusing an unsafe .keras file
        model = keras.saving.load_model(model_path, compile=False)
    _, predictions = data.score(model, hp["batch_size"])
    directory = config.output or join(config.model, "eval")
    makedirs(directory)
    predictions_path = write_predictions(directory, data, predictions)
    null_odds = join(directory, "null_odds.json") if spec.kind == "span" else None
    return predictions_path, null_odds, results["dev"].get("threshold_tuned_on_train_holdout")


def run(config: EvaluateConfig) -> dict:
    try:
        spec = get_task(config.task)
    except KeyError as error:
        raise StageError(str(error.args[0])) from None
    if (config.predictions is None) == (config.model is None):
        raise StageError("give exactly one of --predictions and --model")
    predictions, na_probs, threshold = config.predictions, config.na_probs, config.threshold
    if config.model is not None:
        predictions, na_probs, threshold = predict_with_model(config)
    if not exists(predictions):
        raise StageError(f"{predictions}: predictions file not found")
    if spec.kind == "span":
        scores = score_squad(config.gold, predictions, na_probs, threshold)
    elif spec.kind == "multiple_choice":
        scores = score_race(config.gold, predictions)
    else:
        scores = score_glue(spec.name, config.gold, predictions)
    result = {"task": spec.name, "gold": config.gold, "predictions": predictions, "scores": scores}
    if config.output:
        makedirs(config.output)
        with open_file(join(config.output, "scores.json"), "w") as handle:
            json.dump(result, handle, indent=2, sort_keys=True)
    return result


def main(argv=None, prog="python -m model.evaluate") -> int:
    return stage_main(EvaluateConfig, run, argv, prog=prog, description=__doc__)


if __name__ == "__main__":
    sys.exit(main())
