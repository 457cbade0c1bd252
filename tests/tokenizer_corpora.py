"""Lines of real text from the shared corpora, for tokenizer parity: every non-blank line of the
books (raw, hard-wrapped), SQuAD v1.1 dev contexts and questions, and the GLUE sentences of SST-2,
MRPC, STS-B and CoLA (train and dev). Yields (source, text) in a fixed order."""

from __future__ import annotations

import csv
import json
from collections.abc import Iterator
from pathlib import Path

GLUE_COLUMNS = {
    "SST-2": ["sentence"],
    "MRPC": ["#1 String", "#2 String"],
    "STS-B": ["sentence1", "sentence2"],
}


def book_lines(root: Path) -> Iterator[tuple[str, str]]:
    for path in sorted((root / "books").glob("*.txt")):
        raw = path.read_bytes()
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:  # two of the books are Latin-1
            text = raw.decode("latin-1")
        yield from (("books", line) for line in text.splitlines() if line.strip())


def squad_lines(root: Path) -> Iterator[tuple[str, str]]:
    data = json.loads((root / "squad" / "dev-v1.1.json").read_text(encoding="utf-8"))
    for article in data["data"]:
        for paragraph in article["paragraphs"]:
            yield "squad_context", paragraph["context"]
            yield from (("squad_question", qa["question"]) for qa in paragraph["qas"])


def glue_lines(root: Path) -> Iterator[tuple[str, str]]:
    for task, columns in GLUE_COLUMNS.items():
        for split in ("train", "dev"):
            with open(
                root / "glue" / task / f"{split}.tsv", encoding="utf-8-sig", newline=""
            ) as handle:
                for row in csv.DictReader(handle, delimiter="\t", quoting=csv.QUOTE_NONE):
                    yield from ((f"glue_{task}", row[column]) for column in columns)
    for split in ("train", "dev"):  # CoLA has no header: source, label, original label, sentence
        with open(root / "glue" / "CoLA" / f"{split}.tsv", encoding="utf-8") as handle:
            yield from (("glue_CoLA", line.rstrip("\n").split("\t")[3]) for line in handle)


def corpus_lines(root: Path) -> Iterator[tuple[str, str]]:
    yield from book_lines(root)
    yield from squad_lines(root)
    yield from glue_lines(root)
