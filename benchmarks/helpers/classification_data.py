"""The labelled datasets of ../shared/data/classification (or $ALBERT_SHARED_DATA's), as our
CLI's own-task flags name them, for benchmarks.own_task: BBC News, TREC (its `LABEL question` files
written once as header-less TSV) and GoEmotions."""

from __future__ import annotations

import csv
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from benchmarks.helpers.shared_data import SHARED

CLASSIFICATION = SHARED / "classification"


@dataclass(frozen=True)
class Dataset:
    """A labelled dataset of ../shared/data/classification as our CLI's own-task flags name it."""

    train: str
    dev: str
    text_column: str
    label_column: str
    kind: str
    header: bool
    encoding: str = "utf-8"
    label_separator: str | None = None


DATASETS = {
    "bbc": Dataset("bbc-news/train.csv", "bbc-news/dev.csv", "text", "category", "classification",
                   header=True),
    "trec": Dataset("trec/train_5500.label", "trec/TREC_10.label", "1", "0", "classification",
                    header=False, encoding="latin-1"),
    "goemotions": Dataset("goemotions/train.tsv", "goemotions/dev.tsv", "0", "1", "multi_label",
                          header=False, label_separator=","),
}  # fmt: skip


def trec_rows(lines: Iterable[str]) -> Iterator[tuple[str, str]]:
    """(label, question) of each `LABEL question` line of a TREC file (blank lines skipped)."""
    for line in lines:
        line = line.rstrip("\r\n")
        if line.strip():
            label, _, question = line.partition(" ")
            yield label, question


def as_tsv(source: Path, target: Path, encoding: str) -> Path:
    """A TREC `.label` file as header-less TSV (label, question) in its own `encoding`, written
    once (streamed); other files are read as they are."""
    if source.suffix != ".label":
        return source
    if not target.exists():
        target.parent.mkdir(parents=True, exist_ok=True)
        partial = target.with_suffix(".partial")
        with (
            source.open(encoding=encoding, newline="") as lines,
            partial.open("w", encoding=encoding, newline="") as handle,
        ):
            csv.writer(handle, delimiter="\t", lineterminator="\n").writerows(trec_rows(lines))
        partial.rename(target)
    return target
