"""A team's own task, built from its labelled files (`OwnTaskSettings`: the files, the text and
label columns, the kind; flags or a `task.yaml`) as a `Task` like the registered ones.

- The kind is the labels', as Hugging Face's run_classification infers it, unless `kind` forces
  it: a JSON list (or any label when `label_separator` is set) is multi-label, a number with a
  fraction is regression, the rest (integers, strings) classification. Numbers beside words are
  labels of mixed kinds, an error.
- Classification's label names are the training file's, sorted (integers as numbers); a dev label
  missing from them is an error naming its row (counted and skipped with `on_error="skip"`). One
  class is an error.
- No dev file: the training rows whose text's `stable_hash` falls in the first `dev_fraction` of
  the hash range are the dev set (the same rows for any seed), counted as `held_out`.
- Each split counts its rows (`read`), its labels (`labels`), the training rows whose text came
  before (`duplicates`) and the dev rows also in training (`dev_in_train`).

Bad input is a StageError of one line naming the file and row: an empty text, an unparsable
score, mixed label kinds, one class (and `albert.labelled_files`' own)."""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import asdict, dataclass, replace
from functools import lru_cache
from typing import Any, Literal

import numpy as np

from albert.errors import StageError
from albert.glue_tsv import GlueExample
from albert.hashing import stable_hash
from albert.labelled_files import read_columns
from model.tasks import formats
from model.tasks.task import Format, Hyperparameters, Task

OwnKind = Literal["classification", "multi_label", "regression"]

# A user's task's defaults: the flags change each (`--epochs` sets the steps); BERT's fine-tuning
# learning rate and batch, 10% warmup.
DEFAULTS = Hyperparameters(2e-5, 32, 0.1, 1000, 100, 512)
_INTEGER = re.compile(r"[+-]?\d+")


@dataclass(frozen=True)
class OwnTaskSettings:
    """Where a team's task is and how to read it. `text_columns`: one column, or two (a pair);
    `header`: whether CSV/TSV files start with one; `labels`: the label names when given (else
    the training file's); `dev`: None holds out `dev_fraction` of train."""

    name: str
    train: str
    text_columns: tuple[str, ...]
    label_column: str
    dev: str | None = None
    header: bool = True
    kind: OwnKind | None = None
    label_separator: str | None = None
    encoding: str = "utf-8"
    dev_fraction: float = 0.1
    labels: tuple[str, ...] | None = None

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> OwnTaskSettings:
        values = json.loads(text)
        for key in ("text_columns", "labels"):
            if values.get(key) is not None:
                values[key] = tuple(values[key])
        return cls(**values)


def raw_rows(settings: OwnTaskSettings, path: str) -> Iterator[tuple[str, str, str | None, Any]]:
    """(row id, text, second text or None, raw label) of each row of `path`; an empty text is a
    StageError naming the row and column."""
    columns = (*settings.text_columns, settings.label_column)
    for row_id, values in read_columns(path, columns, settings.header, settings.encoding):
        texts = values[:-1]
        for column, text in zip(settings.text_columns, texts):
            if not isinstance(text, str) or not text.strip():
                raise StageError(f"{row_id}: empty text in column {column!r}")
        yield row_id, texts[0], (texts[1] if len(texts) > 1 else None), values[-1]


def label_values(settings: OwnTaskSettings, raw: Any) -> list[str]:
    """A multi-label row's labels: a JSON list, or the text split on `label_separator` (default
    a comma)."""
    if isinstance(raw, list):
        return [str(value) for value in raw]
    text = str(raw).strip()
    if text.startswith("["):
        try:
            return [str(value) for value in json.loads(text)]
        except json.JSONDecodeError:
            pass
    return [part.strip() for part in text.split(settings.label_separator or ",") if part.strip()]


def encode_multi_label(tokenizer, examples, settings, counts) -> dict:
    """`formats.GLUE.encode`'s inputs, with `labels` the examples' label sets as multi-hot
    float32 rows (`Task.num_labels` wide)."""
    width = own_task(OwnTaskSettings.from_json(settings.task_source)).num_labels
    plain = [replace(example, label=None) for example in examples]
    arrays = formats.GLUE.encode(tokenizer, plain, settings, counts)
    labels = np.zeros((len(examples), width), np.float32)
    for row, example in enumerate(examples):
        labels[row, list(example.label)] = 1.0
    return {**arrays, "labels": labels}


def kind_of_label(raw: Any) -> str:
    """'list', 'integer', 'float' or 'word': what one raw label looks like."""
    if isinstance(raw, list):
        return "list"
    if isinstance(raw, bool) or not isinstance(raw, (int, float, str)):
        return "word"
    if isinstance(raw, (int, float)):
        return "integer" if float(raw).is_integer() else "float"
    text = raw.strip()
    if _INTEGER.fullmatch(text):
        return "integer"
    try:
        float(text)
    except ValueError:
        return "list" if text.startswith("[") else "word"
    return "float"


def infer_kind(settings: OwnTaskSettings, seen: dict[str, str]) -> OwnKind:
    """The task's kind from `seen` (label kind -> the first row id showing it)."""
    if settings.kind:
        return settings.kind
    if "list" in seen or settings.label_separator:
        return "multi_label"
    if ("float" in seen or "integer" in seen) and "word" in seen:
        number = seen.get("float") or seen["integer"]
        raise StageError(
            f"{settings.train}: labels of mixed kinds: a number at {number}, a word at "
            f"{seen['word']}; give --kind"
        )
    return "regression" if "float" in seen else "classification"


def label_order(names) -> tuple[str, ...]:
    """Label names sorted: as numbers when all are integers, else as text."""
    names = set(names)
    if all(_INTEGER.fullmatch(name) for name in names):
        return tuple(sorted(names, key=int))
    return tuple(sorted(names))


@lru_cache(maxsize=8)
def own_task(settings: OwnTaskSettings) -> Task:
    """The task `settings` describe, its kind and label names found in one pass over the
    training file (see the module docstring)."""
    seen: dict[str, str] = {}
    raws: set[str] = set()  # the distinct labels as written (a multi-label row's: its set)
    for row_id, _, _, raw in raw_rows(settings, settings.train):
        seen.setdefault(kind_of_label(raw), row_id)
        raws.add(json.dumps(raw) if isinstance(raw, list) else str(raw).strip())
    kind = infer_kind(settings, seen)
    names = raws
    if kind == "multi_label":
        names = {name for raw in raws for name in label_values(settings, raw)}
    labels = None if kind == "regression" else settings.labels or label_order(names)
    if labels is not None and len(labels) < 2:
        raise StageError(
            f"{settings.train}: one class ({', '.join(labels) or 'none'}): a classifier needs "
            "two or more"
        )
    settings = replace(settings, kind=kind, labels=labels)
    return Task(
        name=settings.name,
        kind=kind,
        num_labels=1 if labels is None else len(labels),
        defaults=DEFAULTS,
        metrics=_METRICS[kind],
        primary_metric=PRIMARY_METRICS[kind],
        format=Format(
            read=read_split,
            encode=encode_multi_label if kind == "multi_label" else formats.GLUE.encode,
        ),
        train_file=settings.train,
        dev_files=(settings.dev or settings.train,),
        labels=labels,
        details=_DETAILS.get(kind),
        source=settings.to_json(),
        texts=len(settings.text_columns),
    )


def text_key(text_a: str, text_b: str | None) -> int:
    """The hash of a row's text (the held-out dev share, duplicates)."""
    return stable_hash((text_a + "\t" + (text_b or "")).encode("utf-8"))


def held_out(settings: OwnTaskSettings, key: int) -> bool:
    """Whether the row of text hash `key` is the dev set's (no dev file: `dev_fraction` of the
    hash range)."""
    return settings.dev is None and key % 10_000 < round(settings.dev_fraction * 10_000)


def read_split(task: Task, split_settings, counts: dict) -> Iterator[GlueExample]:
    """The examples of a split (`Format.read`): train, or dev (the dev file or train's held-out
    share), each label as its index among the task's labels (regression: the score)."""
    settings = OwnTaskSettings.from_json(task.source)
    training = split_settings.split == "train"
    path = settings.train if training or settings.dev is None else settings.dev
    train_keys = set()  # the training rows' texts (not those held out as dev)
    if not training:
        keys = (text_key(a, b) for _, a, b, _ in raw_rows(settings, settings.train))
        train_keys = {key for key in keys if not held_out(settings, key)}
    one_file = not any(c in path for c in "*?[")
    seen_keys: set[int] = set()
    labels = Counter()
    for row_id, text_a, text_b, raw in raw_rows(settings, path):
        key = text_key(text_a, text_b)
        if training and held_out(settings, key):  # the dev set's, never with a dev file
            counts["held_out"] = counts.get("held_out", 0) + 1
            continue
        if not training and settings.dev is None and not held_out(settings, key):
            continue  # a training row
        try:
            label = _label(settings, raw)
        except ValueError as error:
            if split_settings.on_error == "fail":
                raise StageError(f"{row_id}: {error}") from None
            counts["skipped_label"] = counts.get("skipped_label", 0) + 1
            continue
        counts["read"] = counts.get("read", 0) + 1
        if training and key in seen_keys:
            counts["duplicates"] = counts.get("duplicates", 0) + 1
        if not training and key in train_keys:
            counts["dev_in_train"] = counts.get("dev_in_train", 0) + 1
        seen_keys.add(key)
        if settings.labels is None:
            labels[str(raw).strip()] += 1
        else:
            indices = label if isinstance(label, tuple) else [label]
            labels.update(settings.labels[i] for i in indices)
        guid = row_id.rsplit(":", 1)[-1] if one_file else row_id
        yield GlueExample(guid, text_a, text_b, label)
    counts["labels"] = dict(sorted(labels.items()))


def _label(settings: OwnTaskSettings, raw: Any) -> int | float | tuple[int, ...]:
    """A row's label: its index among the labels, (multi-label) their indices, or (regression)
    its score; ValueError says why not."""
    if settings.labels is None:
        try:
            return float(raw)
        except (TypeError, ValueError):
            raise ValueError(f"score {raw!r} is not a number") from None
    names = label_values(settings, raw) if settings.kind == "multi_label" else [str(raw).strip()]
    for name in names:
        if name not in settings.labels:
            known = ", ".join(settings.labels)
            raise ValueError(f"label {name!r} is not among the training labels ({known})")
    indices = tuple(settings.labels.index(name) for name in names)
    return indices if settings.kind == "multi_label" else indices[0]


def classification_metrics(predictions, labels) -> dict[str, float]:
    """Accuracy and macro-F1 (scikit-learn's)."""
    from model.tasks import metrics

    return {
        "accuracy": metrics.accuracy(predictions, labels),
        "macro_f1": metrics.macro_f1(predictions, labels),
    }


def regression_metrics(predictions, labels) -> dict[str, float]:
    """Pearson, Spearman and the mean squared error."""
    from model.tasks import metrics

    return {
        "pearson": metrics.pearson(predictions, labels),
        "spearman": metrics.spearman(predictions, labels),
        "mse": metrics.mean_squared_error(predictions, labels),
    }


def multi_label_metrics(predictions, labels) -> dict[str, float]:
    """Micro- and macro-F1 of multi-hot rows."""
    from model.tasks import metrics

    return {
        "micro_f1": metrics.set_f1(predictions, labels, "micro"),
        "macro_f1": metrics.set_f1(predictions, labels, "macro"),
    }


def multi_label_scores(probabilities: np.ndarray, labels: np.ndarray) -> tuple[dict, np.ndarray]:
    """`multi_label_metrics` of the dev rows at the decision threshold tuned on them for micro-F1
    (`metrics.tuned_threshold`), with that `threshold`; and the predictions (probability >= it)."""
    from model.tasks import metrics

    def micro_f1(predictions, gold) -> float:
        return metrics.set_f1(predictions, gold, "micro")

    threshold = metrics.tuned_threshold(probabilities, labels, micro_f1)
    predictions = probabilities >= threshold
    return {**multi_label_metrics(predictions, labels), "threshold": threshold}, predictions


_METRICS = {
    "classification": classification_metrics,
    "multi_label": multi_label_metrics,
    "regression": regression_metrics,
}
PRIMARY_METRICS = {"classification": "accuracy", "multi_label": "micro_f1", "regression": "pearson"}


def classification_details(predictions, labels, names) -> dict:
    """The per-class table and the confusion matrix (`model.tasks.metrics.per_class`)."""
    from model.tasks import metrics

    return metrics.per_class(predictions, labels, names)


def multi_label_details(predictions, labels, names) -> dict:
    """Each label's precision, recall, F1 and support (`model.tasks.metrics.per_label`)."""
    from model.tasks import metrics

    return metrics.per_label(predictions, labels, names)


_DETAILS = {"classification": classification_details, "multi_label": multi_label_details}
