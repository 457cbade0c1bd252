"""What a fine-tune's output says about its task: the one place `albert predict` and the serving
export read it (`results.json`: the task, its hyperparameters and settings, a tuned threshold).
A benchmark task's kind and labels are its registration's (`model.tasks.registry`); a user's own
task, which no registry holds, is read from the kind and labels its results.json records.

A fine-tune output is a directory with `model.keras` and `results.json` (`model.finetune`,
`model.distill`). Its task's kind says what the model's outputs are and how they become
predictions: `classification` (label names; softmax scores), `multi_label` (label names and a
saved threshold; sigmoid scores), `regression` (one value), `span` (SQuAD: question and context;
v2's no-answer threshold) or `multiple_choice` (RACE: an article, a question, its options).
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from albert.errors import StageError
from albert.fs import exists, join, open_file
from model.tasks import get_task

RESULTS = "results.json"
MODEL = "model.keras"


@dataclass(frozen=True)
class TaskInfo:
    """A fine-tuned model's task: `texts` is how many texts a classification, multi-label or
    regression row takes (1, or 2 for a pair); `labels` the label names (a multiple-choice task's:
    its options' letters); `threshold` is multi-label's saved score bound or SQuAD v2's tuned
    no-answer threshold, which a span task applies when its questions may have no answer
    (`unanswerable`); the rest are the fine-tune's encoding settings."""

    model_dir: str
    task: str
    kind: str
    labels: tuple[str, ...]
    texts: int
    spm_model: str
    max_seq_length: int
    batch_size: int
    truncation: str = "head"
    head_tokens: int = 128
    doc_stride: int = 128
    max_query_length: int = 64
    n_best_size: int = 20
    max_answer_length: int = 30
    threshold: float | None = None
    unanswerable: bool = False

    @property
    def model_file(self) -> str:
        return join(self.model_dir, MODEL)

    @property
    def label_threshold(self) -> float:
        """Multi-label's bound: a label is predicted when its sigmoid score is at least this (the
        saved threshold, 0.5 where none was saved)."""
        return 0.5 if self.threshold is None else self.threshold


def not_fine_tuned(path: str) -> str | None:
    """Why `path` is not a fine-tune output, or None when it is one. A pretraining export (a
    `.keras` file, `export/`, a Hugging Face directory) is told to be fine-tuned first."""
    if exists(join(path, RESULTS)) and exists(join(path, MODEL)):
        return None
    pretrained = (
        path.endswith(".keras")
        or exists(join(path, "export", MODEL))
        or exists(join(path, MODEL))
        or exists(join(path, "config.json"))
    )
    if pretrained:
        init = join(path, "export", MODEL) if exists(join(path, "export", MODEL)) else path
        return (
            "a pretrained model, not a fine-tuned one: fine-tune it first, e.g. "
            f"`albert finetune --task sst2 --init {init} --spm-model SPM --data-dir DATA "
            "--output FT_OUTPUT`, then predict with --model FT_OUTPUT"
        )
    return f"not a fine-tune output (no {RESULTS} and {MODEL}; `albert finetune` writes them)"


def task_info(model_dir: str) -> TaskInfo:
    """The task of the fine-tune output `model_dir`; a StageError naming it when it is none."""
    model_dir = model_dir.rstrip("/")
    if not exists(model_dir):
        raise StageError(f"{model_dir}: model not found")
    reason = not_fine_tuned(model_dir)
    if reason:
        raise StageError(f"{model_dir}: {reason}")
    with open_file(join(model_dir, RESULTS), "r", encoding="utf-8") as handle:
        results = json.load(handle)
    config, hp = results["config"], results["hyperparameters"]
    if config.get("text_column"):  # a user's own task: results.json holds its kind and labels
        name, kind = results["task"], results["kind"]
        labels, pair = tuple(results.get("labels") or ()), len(config["text_column"]) == 2
        threshold = results.get("dev", {}).get("threshold")  # multi-label's, tuned on dev
        unanswerable = False
    else:
        spec = get_task(results["task"])
        name, kind, labels, pair = spec.name, spec.kind, spec.labels or (), spec.texts == 2
        threshold = results.get("dev", {}).get("threshold_tuned_on_train_holdout")
        unanswerable = spec.unanswerable
    spm_model = config["spm_model"]
    if not exists(spm_model):
        raise StageError(f"{spm_model}: the fine-tune's SentencePiece model is not there")
    return TaskInfo(
        model_dir=model_dir,
        task=name,
        kind=kind,
        labels=labels,
        texts=2 if pair else 1,
        spm_model=spm_model,
        max_seq_length=hp["max_seq_length"],
        batch_size=hp["batch_size"],
        truncation=config.get("truncation", "head"),
        head_tokens=config.get("head_tokens", 128),
        doc_stride=config.get("doc_stride", 128),
        max_query_length=config.get("max_query_length", 64),
        n_best_size=config.get("n_best_size", 20),
        max_answer_length=config.get("max_answer_length", 30),
        threshold=threshold,
        unanswerable=unanswerable,
    )
