"""Reader and prediction writer for SQuAD v1.1 / v2.0 JSON files.

v2.0 questions may be `is_impossible` (no answer). Training files have one answer per question; dev
files several; every answer's `answer_start` must point at its text in the context, else the
question is counted under `answer_offset_mismatch` (the offset is kept; alignment reports it).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from albert.errors import StageError
from albert.fs import open_file


@dataclass(frozen=True)
class SquadAnswer:
    text: str
    start: int  # character offset in the context


@dataclass(frozen=True)
class SquadExample:
    qas_id: str
    question: str
    context: str
    answers: tuple[SquadAnswer, ...] = field(default_factory=tuple)
    is_impossible: bool = False
    title: str = ""


def load_squad_json(path: str) -> dict:
    with open_file(path, "rb") as handle:
        try:
            data = json.loads(handle.read().decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as error:
            raise StageError(f"{path}: not a SQuAD JSON file: {error}") from None
    if not isinstance(data, dict) or not isinstance(data.get("data"), list):
        raise StageError(f"{path}: not a SQuAD JSON file (no top-level 'data' list)")
    return data


def read_squad(path: str, counts: dict[str, int] | None = None) -> Iterator[SquadExample]:
    """Examples of a SQuAD file in file order. `counts` receives `questions`, `impossible` and
    `answer_offset_mismatch` totals."""
    counts = counts if counts is not None else {}
    for article_index, article in enumerate(load_squad_json(path)["data"]):
        for paragraph_index, paragraph in enumerate(article.get("paragraphs", [])):
            try:
                context = paragraph["context"]
                qas = paragraph["qas"]
            except KeyError as error:
                raise StageError(
                    f"{path}: article {article_index} paragraph {paragraph_index}: missing {error}"
                ) from None
            for number, qa in enumerate(qas):
                try:
                    qas_id, question = str(qa["id"]), qa["question"]
                    is_impossible = bool(qa.get("is_impossible", False))
                    answers = tuple(
                        SquadAnswer(a["text"], int(a["answer_start"]))
                        for a in qa.get("answers", [])
                    )
                except (KeyError, TypeError, ValueError, AttributeError) as error:
                    title = article.get("title", "") if isinstance(article, dict) else ""
                    where = (
                        f"article {article_index} ({title!r}), paragraph {paragraph_index}, "
                        f"question {number} ({_ordinal(number)})"
                    )
                    named = qa.get("id") if isinstance(qa, dict) else None
                    where += f", id {named!r}" if named is not None else ""
                    reason = (
                        f'it has no "{error.args[0]}" key'
                        if isinstance(error, KeyError)
                        else f"malformed ({type(error).__name__}: {error})"
                    )
                    raise StageError(f"{path}: {where}: {reason}") from None
                if not is_impossible and not answers:
                    raise StageError(
                        f"{path}: question {qas_id} has no answers and is not marked is_impossible"
                    )
                if any(context[a.start : a.start + len(a.text)] != a.text for a in answers):
                    counts["answer_offset_mismatch"] = counts.get("answer_offset_mismatch", 0) + 1
                counts["questions"] = counts.get("questions", 0) + 1
                counts["impossible"] = counts.get("impossible", 0) + int(is_impossible)
                yield SquadExample(
                    qas_id, question, context, answers, is_impossible, article.get("title", "")
                )


def _ordinal(index: int) -> str:
    """'the first' for 0, 'the second' for 1 ...; 'number 12' past the tenth."""
    words = ("first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth", "ninth")
    return f"the {words[index]}" if index < len(words) else f"number {index + 1}"


def gold_of(examples: Iterable[SquadExample]) -> dict[str, list[str]]:
    """qas_id -> gold answer texts (empty list for an unanswerable question)."""
    return {e.qas_id: [] if e.is_impossible else [a.text for a in e.answers] for e in examples}


def gold_answers(path: str) -> dict[str, list[str]]:
    """`gold_of` the questions of a SQuAD file."""
    return gold_of(read_squad(path))


def is_v2(path: str) -> bool:
    """Whether a SQuAD file uses v2.0 fields (a question has `is_impossible`)."""
    data = load_squad_json(path)
    return str(data.get("version", "")).startswith("v2") or any(
        "is_impossible" in qa
        for article in data["data"]
        for p in article["paragraphs"]
        for qa in p["qas"]
    )
