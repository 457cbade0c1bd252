"""Readers for the GLUE tasks in their distributed TSV layouts (download_glue_data.py output).

Each task has its own columns: CoLA has no header, MRPC's header starts with a UTF-8 BOM, STS-B's
score is the last of ten columns, MNLI has matched and mismatched dev files. Rows are split on tabs
with no quoting, as GLUE's own reader does. A malformed row (too few columns, an unknown label, an
unparsable score) raises `StageError` naming the file and line, or with `on_error="skip"` is counted
under `skipped_<reason>` and left out."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Literal

from albert.errors import StageError
from albert.fs import open_file

logger = logging.getLogger(__name__)

OnError = Literal["fail", "skip"]


@dataclass(frozen=True)
class GlueExample:
    guid: str
    text_a: str
    text_b: str | None
    label: int | float | None  # class index, STS-B score, or None for test files


@dataclass(frozen=True)
class Layout:
    """Where a split's fields are: column indices (negative counts from the end), header or not."""

    text_a: int
    text_b: int | None
    label: int | None
    header: bool = True
    guid: int | None = None  # column with the example id (None: the line number)
    columns: int = 0  # at least this many columns (0: as many as the indices need)


# Label values as they appear in the files, in class-index order.
LABELS: dict[str, list[str] | None] = {
    "cola": ["0", "1"],
    "sst2": ["0", "1"],
    "mrpc": ["0", "1"],
    "stsb": None,  # regression
    "qqp": ["0", "1"],
    "mnli": ["contradiction", "entailment", "neutral"],
    "qnli": ["entailment", "not_entailment"],
    "rte": ["entailment", "not_entailment"],
    "wnli": ["0", "1"],
}

_TRAIN_DEV: dict[str, Layout] = {
    "cola": Layout(3, None, 1, header=False),
    "sst2": Layout(0, None, 1),
    "mrpc": Layout(3, 4, 0),
    "stsb": Layout(7, 8, -1, guid=0, columns=10),
    "qqp": Layout(3, 4, 5, guid=0),
    "mnli": Layout(8, 9, -1, guid=0, columns=12),
    "qnli": Layout(1, 2, -1, guid=0, columns=4),
    "rte": Layout(1, 2, -1, guid=0, columns=4),
    "wnli": Layout(1, 2, -1, guid=0, columns=4),
}

_TEST: dict[str, Layout] = {
    "cola": Layout(1, None, None, guid=0),
    "sst2": Layout(1, None, None, guid=0),
    "mrpc": Layout(3, 4, None, guid=0),
    "stsb": Layout(7, 8, None, guid=0),
    "qqp": Layout(1, 2, None, guid=0),
    "mnli": Layout(8, 9, None, guid=0),
    "qnli": Layout(1, 2, None, guid=0),
    "rte": Layout(1, 2, None, guid=0),
    "wnli": Layout(1, 2, None, guid=0),
}


def layout_for(task: str, split: str) -> Layout:
    """The column layout of `task`'s `split` ('train', 'dev', 'dev_matched', 'test', ...)."""
    if task not in _TRAIN_DEV:
        raise KeyError(f"not a GLUE task: {task!r}; known: {', '.join(_TRAIN_DEV)}")
    return (_TEST if split.startswith("test") else _TRAIN_DEV)[task]


def _columns_needed(layout: Layout) -> int:
    indices = [
        i for i in (layout.text_a, layout.text_b, layout.label, layout.guid) if i is not None
    ]
    return max([layout.columns] + [(i + 1 if i >= 0 else -i) for i in indices])


def parse_row(task: str, layout: Layout, fields: list[str], line_number: int) -> GlueExample:
    """One example from the tab-separated fields of a row; raises ValueError saying what is
    wrong."""
    if len(fields) < _columns_needed(layout):
        raise ValueError(f"expected at least {_columns_needed(layout)} columns, got {len(fields)}")
    label: int | float | None = None
    if layout.label is not None:
        raw = fields[layout.label].strip()
        labels = LABELS[task]
        if labels is None:
            try:
                label = float(raw)
            except ValueError:
                raise ValueError(f"score {raw!r} is not a number") from None
        elif raw in labels:
            label = labels.index(raw)
        else:
            raise ValueError(f"label {raw!r} is not one of {labels}")
    guid = fields[layout.guid] if layout.guid is not None else str(line_number)
    text_b = fields[layout.text_b] if layout.text_b is not None else None
    return GlueExample(guid=guid, text_a=fields[layout.text_a], text_b=text_b, label=label)


def read_glue(
    task: str,
    path: str,
    split: str = "train",
    on_error: OnError = "fail",
    counts: dict[str, int] | None = None,
) -> Iterator[GlueExample]:
    """Stream the examples of one GLUE TSV file.

    `split` selects the layout (test files have no label column). `counts`, if given, receives
    `read` and `skipped_<reason>` totals."""
    layout = layout_for(task, split)
    counts = counts if counts is not None else {}
    with open_file(path, "rb") as handle:
        for line_number, raw_line in enumerate(handle, start=1):
            line = raw_line.decode("utf-8-sig" if line_number == 1 else "utf-8").rstrip("\r\n")
            if line_number == 1 and layout.header:
                continue
            if not line.strip():
                continue
            try:
                example = parse_row(task, layout, line.split("\t"), line_number)
            except ValueError as error:
                if on_error == "fail":
                    raise StageError(f"{path}:{line_number}: {error}") from None
                reason = "columns" if "columns" in str(error) else "label"
                counts[f"skipped_{reason}"] = counts.get(f"skipped_{reason}", 0) + 1
                logger.warning("%s:%d: skipped: %s", path, line_number, error)
                continue
            counts["read"] = counts.get("read", 0) + 1
            yield example
