"""Fine-tuning tasks: their official metrics, SQuAD features, and a split's encoding (`splits`), in
worker processes too (`parallel_encoding`). The readers of GLUE, SQuAD and RACE files are in
`albert/` (glue_tsv, squad_json, race_json): decontamination (pipelines/) reads the same files.

`TASKS` describes every task the fine-tuning CLI knows: its kind (how examples become model inputs
and which head is used), its files in the task's data directory, its metrics and the metric that
early stopping and model selection follow.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

TaskKind = Literal["classification", "regression", "span", "multiple_choice"]


@dataclass(frozen=True)
class TaskSpec:
    name: str
    kind: TaskKind
    num_labels: int
    train_file: str
    dev_files: tuple[str, ...]
    primary_metric: str
    directory: str
    dev_names: tuple[str, ...] = ()  # official names of the dev sets, where a task has several


def _glue(name, directory, kind, num_labels, metric, dev=("dev.tsv",), dev_names=()):
    return TaskSpec(name, kind, num_labels, "train.tsv", dev, metric, directory, dev_names)


TASKS: dict[str, TaskSpec] = {
    "cola": _glue("cola", "CoLA", "classification", 2, "mcc"),
    "sst2": _glue("sst2", "SST-2", "classification", 2, "accuracy"),
    "mrpc": _glue("mrpc", "MRPC", "classification", 2, "f1"),
    "stsb": _glue("stsb", "STS-B", "regression", 1, "pearson"),
    "qqp": _glue("qqp", "QQP", "classification", 2, "f1"),
    "mnli": _glue(
        "mnli",
        "MNLI",
        "classification",
        3,
        "accuracy",
        ("dev_matched.tsv", "dev_mismatched.tsv"),
        ("MNLI-m", "MNLI-mm"),
    ),
    "qnli": _glue("qnli", "QNLI", "classification", 2, "accuracy"),
    "rte": _glue("rte", "RTE", "classification", 2, "accuracy"),
    "wnli": _glue("wnli", "WNLI", "classification", 2, "accuracy"),
    "squad1": TaskSpec("squad1", "span", 2, "train-v1.1.json", ("dev-v1.1.json",), "f1", "squad"),
    "squad2": TaskSpec("squad2", "span", 2, "train-v2.0.json", ("dev-v2.0.json",), "f1", "squad"),
    "race": TaskSpec("race", "multiple_choice", 4, "train", ("dev",), "accuracy", "RACE"),
}


def get_task(name: str) -> TaskSpec:
    key = name.lower().replace("-", "").replace("_", "")
    aliases = {
        "sst": "sst2",
        "sts": "stsb",
        "squad": "squad1",
        "squadv1": "squad1",
        "squadv2": "squad2",
        "squad11": "squad1",
        "squad20": "squad2",
        "mnlim": "mnli",
    }
    key = aliases.get(key, key)
    if key not in TASKS:
        raise KeyError(f"unknown task {name!r}; known: {', '.join(TASKS)}")
    return TASKS[key]
