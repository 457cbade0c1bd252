"""Evaluation sets for decontamination: what an `--eval PATH` names, and each example's texts.

The formats are those fine-tuning reads, through the same readers (`albert.glue_tsv`,
`albert.squad_json`, `albert.race_json`), plus plain text and JSONL of one's own:

- a GLUE task directory (`CoLA/`, `SST-2/` ...: its name is the task) -> one split per `dev*.tsv`
  and `test*.tsv`; a directory of such task directories -> every task; one `.tsv` file of a task
  directory (`CoLA/train.tsv`) -> that split. An example is a row; its texts are the row's sentences
  (`text_a`, and `text_b` where the task has one).
- a SQuAD JSON file (`*.json`) -> one split named after the file. An example is a question; its
  texts are the paragraph's context and the question, compared separately (the answers are spans
  of the context).
- a RACE split directory (`dev/` holding `middle/` and `high/`) -> that split; a directory of such
  splits (`RACE/`) -> its `dev` and `test` splits. An example is a question; its texts are the
  article, the question and each of its four options.
- a user's task directory (one holding a `task.yaml`, `albert.task_yaml`: the task fine-tuning
  reads) -> its dev file, or without one its training file (whose held-out share is its dev set),
  as a split named after the task. An example is a row; its texts are its text columns, read as
  fine-tuning reads them (`albert.labelled_files`: CSV, TSV or JSON Lines, the header and the
  encoding its settings give).
- a text file (`*.txt`): an example per non-blank line; a JSONL file (`*.jsonl`): an example per
  record, its text in `"text"` and its id in `"id"` (default: the line number).

Texts are compared one by one, so no n-gram spans two of them. A directory stands for its evaluation
splits (dev, test): a training split is what fine-tuning learns from, not what it scores; name its
file or directory to check it too.
"""

from __future__ import annotations

import json
import logging
import posixpath
from collections.abc import Iterator
from dataclasses import dataclass

from albert.errors import StageError
from albert.fs import exists, expand, filesystem, join, open_file
from albert.glue_tsv import LABELS, read_glue
from albert.labelled_files import read_columns
from albert.race_json import LEVELS, read_race
from albert.squad_json import read_squad
from albert.task_yaml import has_header, read_task_yaml, text_columns

logger = logging.getLogger(__name__)
FORMATS = (
    "a GLUE task directory, a SQuAD .json file, a RACE directory, a task directory with its "
    "task.yaml, a .txt or .jsonl file"
)


@dataclass(frozen=True)
class EvalSplit:
    """One split of an evaluation set: `name` (glue task, `squad`, `race`, a user's task, or the
    file's stem), `split` (the file or directory it came from), `format` and `path`; a user's
    task's files: the text `columns`, whether they start with a `header`, their `encoding`."""

    name: str
    split: str
    format: str
    path: str
    columns: tuple[str, ...] = ()
    header: bool = True
    encoding: str = "utf-8"


@dataclass(frozen=True)
class EvalExample:
    """One example: its id within its split and the texts of it that are compared."""

    id: str
    texts: tuple[str, ...]


def _stem(path: str) -> str:
    return posixpath.splitext(posixpath.basename(path.rstrip("/")))[0]


def _glue_task(directory: str) -> str | None:
    task = posixpath.basename(directory.rstrip("/")).lower().replace("-", "")
    return task if task in LABELS else None


def _is_dir(path: str) -> bool:
    fs, local = filesystem(path)
    return fs.isdir(local)


def _subdirectories(path: str) -> list[str]:
    return [child for child in expand(join(path, "*")) if _is_dir(child)]


def _is_evaluation(path: str) -> bool:
    return _stem(path).startswith(("dev", "test"))


def _glue_splits(directory: str) -> list[EvalSplit]:
    task = _glue_task(directory)
    tables = [table for table in expand(join(directory, "*.tsv")) if _is_evaluation(table)]
    if task is None or not tables:
        return []
    return [EvalSplit(task, _stem(table), "glue", table) for table in tables]


def _task_splits(directory: str) -> list[EvalSplit]:
    """A user's task directory's evaluation split (see the module docstring); [] without a
    task.yaml, a task.yaml without `train` or `text_column` a StageError naming it."""
    settings = read_task_yaml(directory)
    if not settings:
        return []
    columns = text_columns(settings.get("text_column"))
    path = settings.get("dev") or settings.get("train")
    if not path or not columns:
        raise StageError(f"{join(directory, 'task.yaml')}: needs train and text_column")
    return [
        EvalSplit(
            str(settings.get("name") or _stem(directory)),
            _stem(path),
            "task",
            path,
            columns,
            has_header(columns, settings.get("header")),
            str(settings.get("encoding") or "utf-8"),
        )
    ]


def _not_read(child: str) -> str | None:
    """Why a directory inside a directory of sets gives no split (None: a training split, left
    out by design)."""
    if _is_race_split(child):
        return None
    if _glue_task(child) is not None:
        return "a GLUE task directory without dev*.tsv or test*.tsv"
    return "neither a GLUE task directory, a RACE split nor a task directory with a task.yaml"


def _say_not_read(path: str, unread: list[tuple[str, str]], strict: bool) -> None:
    """One line naming the directories of `path` that were not read and why: a warning, or with
    `strict` a StageError."""
    if not unread:
        return
    count = f"{len(unread)} director{'y' if len(unread) == 1 else 'ies'}"
    named = "; ".join(f"{child} ({reason})" for child, reason in unread)
    message = f"{path}: {count} not read: {named}"
    if strict:
        raise StageError(message)
    logger.warning("%s (--strict makes this an error)", message)


def _is_race_split(directory: str) -> bool:
    return any(_is_dir(join(directory, level)) for level in LEVELS)


def eval_splits(path: str, strict: bool = False) -> list[EvalSplit]:
    """The splits `path` names, in a fixed order; StageError `PATH: reason` (one line) for a path
    that is missing or in none of the formats. The directories of a directory of sets that give no
    split (an unknown name, a task without dev or test tables; a training split is left out by
    design, without a word) are named in one warning, or with `strict` a StageError."""
    if not exists(path):
        raise StageError(f"{path}: no such evaluation file or directory")
    if not _is_dir(path) and path.endswith(".tsv"):
        task = _glue_task(posixpath.dirname(path))
        if task is None:
            raise StageError(f"{path}: a .tsv file outside a GLUE task directory (e.g. CoLA/)")
        return [EvalSplit(task, _stem(path), "glue", path)]
    if not _is_dir(path):
        suffix = posixpath.splitext(path)[1].lower()
        formats = {".json": "squad", ".jsonl": "jsonl", ".txt": "text"}
        if suffix not in formats:
            raise StageError(f"{path}: unknown evaluation format (expected {FORMATS})")
        name = "squad" if formats[suffix] == "squad" else _stem(path)
        split = _stem(path) if formats[suffix] == "squad" else "all"
        return [EvalSplit(name, split, formats[suffix], path)]
    if _is_race_split(path):
        return [EvalSplit("race", _stem(path), "race", path)]
    splits = _task_splits(path) or _glue_splits(path)
    unread: list[tuple[str, str]] = []
    for child in [] if splits else _subdirectories(path):
        if _is_race_split(child) and _is_evaluation(child):
            splits.append(EvalSplit("race", _stem(child), "race", child))
        elif found := _task_splits(child) or _glue_splits(child):
            splits.extend(found)
        elif (reason := _not_read(child)) is not None:
            unread.append((child, reason))
    if not splits:
        raise StageError(
            f"{path}: unknown evaluation format: a directory, but not a GLUE task directory "
            f"(named after its task, holding *.tsv), a RACE directory or a task directory with a "
            f"task.yaml (expected {FORMATS})"
        )
    _say_not_read(path, unread, strict)
    return splits


def _text_lines(path: str) -> Iterator[tuple[int, str]]:
    """(line number, line) of a UTF-8 file; not UTF-8 is a StageError naming the line."""
    with open_file(path, "rb") as handle:
        for number, raw in enumerate(handle, start=1):
            try:
                yield number, raw.decode("utf-8-sig" if number == 1 else "utf-8")
            except UnicodeDecodeError:
                raise StageError(f"{path}:{number}: not UTF-8 text") from None


def _jsonl_example(path: str, number: int, line: str) -> EvalExample:
    try:
        record = json.loads(line)
    except json.JSONDecodeError as error:
        raise StageError(f"{path}:{number}: not a JSON record: {error.msg}") from None
    if not isinstance(record, dict) or not isinstance(record.get("text"), str):
        raise StageError(f'{path}:{number}: expected a JSON object with a "text" string')
    return EvalExample(str(record.get("id", number)), (record["text"],))


def read_examples(split: EvalSplit) -> Iterator[EvalExample]:
    """The split's examples in file order (readers' errors: StageError naming file and record)."""
    if split.format == "glue":
        for row in read_glue(split.name, split.path, split.split):
            yield EvalExample(row.guid, tuple(t for t in (row.text_a, row.text_b) if t))
    elif split.format == "squad":
        for question in read_squad(split.path):
            yield EvalExample(question.qas_id, (question.context, question.question))
    elif split.format == "race":
        for question in read_race(split.path):
            texts = (question.article, question.question, *question.options)
            yield EvalExample(question.example_id, texts)
    elif split.format == "task":
        yield from _task_examples(split)
    elif split.format == "text":
        for number, line in _text_lines(split.path):
            if line.strip():
                yield EvalExample(str(number), (line.strip(),))
    else:
        for number, line in _text_lines(split.path):
            if line.strip():
                yield _jsonl_example(split.path, number, line)


def _task_examples(split: EvalSplit) -> Iterator[EvalExample]:
    """A user's task's rows: id `LINE` (`FILE:LINE` for a glob) and the non-empty texts."""
    one_file = not any(c in split.path for c in "*?[")
    for row_id, values in read_columns(split.path, split.columns, split.header, split.encoding):
        texts = tuple(v.strip() for v in values if isinstance(v, str) and v.strip())
        yield EvalExample(row_id.rsplit(":", 1)[-1] if one_file else row_id, texts)
