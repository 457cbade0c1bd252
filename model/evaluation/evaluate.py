"""Score predictions or a fine-tuned model on a task's dev data with the official metrics.

    python -m model.evaluation.evaluate --task sst2 --gold glue/SST-2/dev.tsv \
        --predictions run/predictions.tsv
    python -m model.evaluation.evaluate --task squad2 --gold dev-v2.0.json \
        --predictions predictions.json --na-probs null_odds.json
    python -m model.evaluation.evaluate --task sst2 --model runs/sst2 --gold glue/SST-2/dev.tsv

Prediction formats are those `model.finetune` writes: GLUE `predictions.tsv` (`index`, then the
label as in the task's files, or the STS-B score), SQuAD `predictions.json` (`{id: answer}`, with
`null_odds.json` (`--na-probs`) for the official v2 threshold sweep; a question then also scores as
unanswered when its null odds exceed `--threshold`, the official script's `--na-prob-thresh`, whose
default 1.0 applies when it is not given; with `--model` the threshold `model.finetune` tuned on its
held-out training articles is used), RACE `predictions.jsonl`
(`{"id": "middle/13-0", "answer": "A"}`). With `--model` (a `model.finetune` output directory),
the model predicts the gold file first. """

from __future__ import annotations

import json
import sys

import keras
from pydantic import Field

from albert.config import StageConfig
from albert.errors import StageError, naming
from albert.fs import exists, join, makedirs, open_file
from albert.stage import stage_main
from albert.tokenization import AlbertTokenizer
from model.finetune.config import FinetuneConfig, Hyperparameters
from model.finetune.kind import TaskKind
from model.finetune.kinds import task_kind
from model.tasks.scoring import read_json


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


def predict_with_model(
    kind: TaskKind, config: EvaluateConfig
) -> tuple[str, str | None, float | None]:
    """Run a fine-tuned model (a model.finetune output) on the gold file; return the path of its
    predictions (and null odds) and its tuned threshold, written under OUTPUT or the model
    directory's `eval/`."""
    results = read_json(join(config.model, "results.json"))
    finetune_config = FinetuneConfig(
        **{
            **results["config"],
            "dev_file": config.gold,
            "max_dev_examples": None,
            "multitask": [],
            "further_pretrain_steps": 0,
        }
    )
    hp = Hyperparameters(**results["hyperparameters"])
    threshold = results["dev"].get("threshold_tuned_on_train_holdout")
    data = kind.load(
        finetune_config,
        AlbertTokenizer(finetune_config.spm_model),
        hp,
        with_train=False,
        threshold=threshold,
    )
    model_path = join(config.model, "model.keras")
    with naming(model_path):  # e.g. Keras refusing an unsafe .keras file
        model = keras.saving.load_model(model_path, compile=False)
    _, predictions = kind.score(model, data, hp.batch_size)
    directory = config.output or join(config.model, "eval")
    makedirs(directory)
    predictions_path = kind.write_predictions(directory, data, predictions)
    null_odds = join(directory, kind.null_odds_file) if kind.null_odds_file else None
    return predictions_path, null_odds, threshold


def run(config: EvaluateConfig) -> dict:
    kind = task_kind(config.task)
    if (config.predictions is None) == (config.model is None):
        raise StageError("give exactly one of --predictions and --model")
    predictions, na_probs, threshold = config.predictions, config.na_probs, config.threshold
    if config.model is not None:
        predictions, na_probs, threshold = predict_with_model(kind, config)
    if not exists(predictions):
        raise StageError(f"{predictions}: predictions file not found")
    scores = kind.score_files(config.gold, predictions, na_probs, threshold)
    result = {
        "task": kind.spec.name,
        "gold": config.gold,
        "predictions": predictions,
        "scores": scores,
    }
    if config.output:
        makedirs(config.output)
        with open_file(join(config.output, "scores.json"), "w") as handle:
            json.dump(result, handle, indent=2, sort_keys=True)
    return result


def main(argv=None, prog="python -m model.evaluation.evaluate") -> int:
    return stage_main(EvaluateConfig, run, argv, prog=prog, description=__doc__)


if __name__ == "__main__":
    sys.exit(main())
