"""Reader for RACE: one JSON file per article (`article`, `questions`, `options`, `answers`, `id`),
laid out as `{split}/{middle,high}/N.txt` in the original release.

Each question becomes one four-way example. As in the ALBERT reference, a question containing the
blank `_` is filled with each option; otherwise the option follows the question.
"""

from __future__ import annotations

import json
import posixpath
from collections.abc import Iterator
from dataclasses import dataclass

from albert.errors import StageError
from albert.fs import expand, join, open_file

LEVELS = ("middle", "high")
ANSWER_LETTERS = "ABCD"


@dataclass(frozen=True)
class RaceExample:
    example_id: str  # "{level}/{file stem}-{question index}"
    level: str
    article: str
    question: str
    options: tuple[str, ...]
    label: int | None

    def option_texts(self) -> list[str]:
        """The question completed by each option (second segment of each choice)."""
        return [fill_option(self.question, option) for option in self.options]


def fill_option(question: str, option: str) -> str:
    if "_" in question:
        return question.replace("_", option)
    return f"{question} {option}"


def parse_race_file(path: str, level: str, data: dict) -> list[RaceExample]:
    """Examples of one RACE article; raises StageError naming the file for a malformed record."""
    stem = posixpath.splitext(posixpath.basename(path))[0]
    try:
        article, questions, options, answers = (
            data["article"],
            data["questions"],
            data["options"],
            data["answers"],
        )
    except (KeyError, TypeError) as error:
        raise StageError(f"{path}: missing field {error}") from None
    if not (len(questions) == len(options) == len(answers)):
        raise StageError(
            f"{path}: {len(questions)} questions, {len(options)} option lists and "
            f"{len(answers)} answers differ in number"
        )
    examples = []
    for index, (question, choices, answer) in enumerate(zip(questions, options, answers)):
        if len(choices) != 4:
            raise StageError(f"{path}: question {index} has {len(choices)} options, expected 4")
        if answer not in ANSWER_LETTERS:
            raise StageError(f"{path}: question {index} has answer {answer!r}, expected one of A-D")
        examples.append(
            RaceExample(
                f"{level}/{stem}-{index}",
                level,
                article,
                question,
                tuple(choices),
                ANSWER_LETTERS.index(answer),
            )
        )
    return examples


def read_race(split_dir: str, levels: tuple[str, ...] = LEVELS) -> Iterator[RaceExample]:
    """Stream the examples of one split directory (e.g. `RACE/dev`), level by level, files in
    order."""
    found = False
    for level in levels:
        for path in expand(join(split_dir, level, "*.txt")):
            found = True
            with open_file(path, "rb") as handle:
                try:
                    data = json.loads(handle.read().decode("utf-8"))
                except (UnicodeDecodeError, json.JSONDecodeError) as error:
                    raise StageError(f"{path}: not a RACE JSON file: {error}") from None
            yield from parse_race_file(path, level, data)
    if not found:
        raise StageError(f"{split_dir}: no RACE files under {'/'.join(levels)}/*.txt")
