"""Score predictions or a fine-tuned model on a task's dev data with the official metrics.

    python -m model.evaluation.evaluate --task sst2 --gold glue/SST-2/dev.tsv \
        --predictions run/predictions.tsv
    python -m model.evaluation.evaluate --task squad2 --gold dev-v2.0.json \
        --predictions predictions.json --na-probs null_odds.json
    python -m model.evaluation.evaluate --task sst2 --model runs/sst2 --gold glue/SST-2/dev.tsv
    albert evaluate --train tickets.csv --dev dev.csv --text-column 0,1 --label-column 2 \
        --predictions runs/tickets/predictions.tsv
    albert evaluate --model runs/tickets            # a user's task, on its own dev set

A task is a registered one (`--task`), a user's own (its files and columns, as `albert finetune`
takes them: flags or `--data-dir` with its `task.yaml`), or, with `--model` and neither, the
fine-tune's own (its results.json). A user's task's gold is its dev set: `--gold` (or `--dev`),
else its own dev file, else the held-out share of its training file.

Prediction formats are those `model.finetune` writes: GLUE `predictions.tsv` (`index`, then the
label as in the task's files, or the STS-B score), SQuAD `predictions.json` (`{id: answer}`, with
`null_odds.json` (`--na-probs`) for the official v2 threshold sweep; a question then also scores as
unanswered when its null odds exceed `--threshold`, the official script's `--na-prob-thresh`, whose
default 1.0 applies when it is not given; with `--model` the threshold `model.finetune` tuned on its
held-out training articles is used), RACE `predictions.jsonl`
(`{"id": "middle/13-0", "answer": "A"}`); a user's task's are its fine-tune's `predictions.tsv`
(the label, a multi-label row's labels joined by commas, or the score). With `--model` (a
`model.finetune` output directory), the model predicts the gold file first. """

from __future__ import annotations

import json
import sys

import keras
from pydantic import Field, model_validator

from albert.errors import StageError, naming
from albert.fs import exists, join, makedirs, open_file
from albert.stage import stage_main
from albert.tokenization import AlbertTokenizer
from model.finetune.config import (
    FinetuneConfig,
    Hyperparameters,
    OwnTaskFields,
    own_settings,
    task_of,
)
from model.finetune.kind import TaskKind
from model.finetune.kinds import task_kind
from model.tasks import Task
from model.tasks.own_task import own_task
from model.tasks.scoring import read_json


class EvaluateConfig(OwnTaskFields):
    task: str | None = Field(
        None,
        description="a registered task (as model.finetune), or your own task's name (default: "
        "the --train file's stem; with --model, the fine-tune's task)",
    )
    gold: str | None = Field(
        None,
        description="gold file: a GLUE dev TSV, a SQuAD JSON, a RACE split directory, or your "
        "own task's dev file (default: its --dev, else the held-out share of its --train)",
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

    @model_validator(mode="after")
    def _named_task(self) -> EvaluateConfig:
        if self.text_column and not self.train_file:
            raise ValueError("--text-column (your own task) needs --train")
        if not (self.text_column or self.task or self.model):
            raise ValueError("give --task, your own task's --train and --text-column, or --model")
        if self.task and not self.text_column and not self.gold:
            raise ValueError(f"--task {self.task}: give --gold")
        return self


def predict_with_model(
    kind: TaskKind, config: EvaluateConfig, fine_tuned: FinetuneConfig
) -> tuple[str, str | None, float | None]:
    """Run a fine-tuned model (a model.finetune output whose config, its dev file the gold, is
    `fine_tuned`) on the gold file; return the path of its predictions (and null odds) and its
    tuned threshold, written under OUTPUT or the model directory's `eval/`."""
    results = read_json(join(config.model, "results.json"))
    hp = Hyperparameters(**results["hyperparameters"])
    threshold = results["dev"].get("threshold_tuned_on_train_holdout")
    data = kind.load(
        fine_tuned, AlbertTokenizer(fine_tuned.spm_model), hp, with_train=False, threshold=threshold
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


def fine_tuned_config(config: EvaluateConfig) -> FinetuneConfig | None:
    """The `--model`'s fine-tuning config (its results.json), its dev file the gold (`--gold`
    when given) and every dev example read; None without --model."""
    if config.model is None:
        return None
    values = read_json(join(config.model, "results.json"))["config"]
    dev = {"dev_file": config.gold} if config.gold else {}
    return FinetuneConfig(
        **{
            **values,
            **dev,
            "max_dev_examples": None,
            "multitask": [],
            "further_pretrain_steps": 0,
        }
    )


def evaluated_task(config: EvaluateConfig, fine_tuned: FinetuneConfig | None) -> tuple[Task, str]:
    """The task scored and its gold file: your own (its files and columns; `--gold` its dev
    file), the registered one `--task` names (`--gold`), else the `--model`'s own."""
    if config.text_column:
        dev = {"dev_file": config.gold} if config.gold else {}
        task = own_task(own_settings(config.model_copy(update=dev)))
        return task, task.dev_files[0]
    if config.task:
        return task_kind(config.task).spec, config.gold
    task = task_of(fine_tuned)
    if fine_tuned.text_column:  # a user's: its dev file, or the training file's held-out share
        return task, task.dev_files[0]
    return task, task_kind(task).paths(fine_tuned)[1]


def run(config: EvaluateConfig) -> dict:
    if (config.predictions is None) == (config.model is None):
        raise StageError("give exactly one of --predictions and --model")
    fine_tuned = fine_tuned_config(config)
    task, gold = evaluated_task(config, fine_tuned)
    kind = task_kind(task)
    predictions, na_probs, threshold = config.predictions, config.na_probs, config.threshold
    if fine_tuned is not None:
        predictions, na_probs, threshold = predict_with_model(kind, config, fine_tuned)
    if not exists(predictions):
        raise StageError(f"{predictions}: predictions file not found")
    scores = kind.score_files(gold, predictions, na_probs, threshold)
    result = {"task": task.name, "gold": gold, "predictions": predictions, "scores": scores}
    if config.output:
        makedirs(config.output)
        with open_file(join(config.output, "scores.json"), "w") as handle:
            json.dump(result, handle, indent=2, sort_keys=True)
    return result


def main(argv=None, prog="python -m model.evaluation.evaluate") -> int:
    return stage_main(EvaluateConfig, run, argv, prog=prog, description=__doc__)


if __name__ == "__main__":
    sys.exit(main())
