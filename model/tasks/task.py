"""A fine-tuning task as one object (`Task`): its files, its labels, its kind (which head and loss
`model.finetune.kinds` binds to it), its default hyperparameters, its metrics and the metric model
selection follows, and its `Format` (how a split's file is read and its examples encoded). Tasks
are registered once (`model.tasks.registry`); the benchmark tasks' registrations are
`model.tasks.benchmark_tasks`. Light: an encoding worker imports it (no Keras, no SciPy)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

# The head and loss a task trains (`model.finetune.kinds.KINDS`).
Kind = Literal["classification", "multi_label", "regression", "span", "multiple_choice"]


@dataclass(frozen=True)
class Hyperparameters:
    """A task's training settings: its defaults (the benchmark tasks': Table 14 of the ALBERT
    paper), each replaced by a config value when one is given (`model.finetune.config`)."""

    learning_rate: float
    batch_size: int
    classifier_dropout: float
    train_steps: int
    warmup_steps: int
    max_seq_length: int


@dataclass(frozen=True)
class Format:
    """How a task's split files are read and their examples encoded, from a split's settings
    (`model.tasks.splits.SplitSettings`):

    - `read(task, settings, counts)`: the split's examples in file order, the reader's totals and
      skipped rows added to `counts`;
    - `encode(tokenizer, examples, settings, counts)`: the model inputs and labels, one row per
      example (SQuAD: per window);
    - `cut_keys(examples)`: where the examples may be cut into chunks for the encoding workers
      (between two of different keys)."""

    read: Callable[[Task, Any, dict], Iterable]
    encode: Callable[[Any, list, Any, dict], dict[str, np.ndarray]]
    cut_keys: Callable[[list], list] = lambda examples: list(range(len(examples)))


Metrics = Callable[[Sequence, Sequence], Mapping[str, float]]


@dataclass(frozen=True)
class Task:
    """One task. `labels` are the label names in class-index order (a multiple-choice task's: its
    options' letters; None: a score or a span);
    `num_labels` the head's outputs; `metrics(predictions, labels)` its dev metrics (None: its
    kind scores its decoded predictions itself, as SQuAD's and RACE's do), of which
    `primary_metric` selects the model and stops training early; `directory` the task's usual
    directory name (e.g. glue's `SST-2`), holding `train_file` and `dev_files` (`dev_names`: the
    official names of the dev sets, where a task has several). `details(predictions, labels,
    label names)`, where a task has it, adds to `results.json` what is no single number (a user's
    task's per-class table and confusion matrix); `source` is what its `format` reads its files by
    (a user's task's settings as JSON, `model.tasks.own_task`). `texts` is how many texts a row
    of a classification or regression task gives the model (1, or 2 for a pair);
    `unanswerable` says that a span task's questions may have no answer (SQuAD v2.0's: a
    no-answer threshold is tuned and applied)."""

    name: str
    kind: Kind
    num_labels: int
    defaults: Hyperparameters
    metrics: Metrics | None
    primary_metric: str
    format: Format
    train_file: str
    dev_files: tuple[str, ...]
    directory: str = ""
    dev_names: tuple[str, ...] = ()
    labels: tuple[str, ...] | None = None
    details: Callable[[Sequence, Sequence, Sequence[str]], dict] | None = None
    source: str | None = None
    texts: int = 1
    unanswerable: bool = False
