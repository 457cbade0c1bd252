"""The rows `albert predict` reads: CSV, TSV (a header row names the columns), JSONL (one object a
line) and plain text (one text a line, the column `text`), streamed a line at a time.

Each row is a `Row`: its position (the file's index among the sorted input files, the row's index
in its file: what the output is sorted by), the fields it keeps in the output (every field, or the
`--id-column`), and its texts by role (`text`: one or two texts; `question`, `context`; `choices`).
A row that cannot be read (not UTF-8, not a JSON object, a missing column, a value that is not a
text) is a `StageError` naming the file, the line and the reason, or, with `on_error="skip"`, is
counted under `skipped_<reason>` and left out. Pure functions: no Beam.
"""

from __future__ import annotations

import csv
import json
import os
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

from albert.errors import StageError
from albert.fs import open_file

Counter = Callable[[str, int], None]
"""inc(name, amount): how the reader reports what it skipped."""

EXTENSIONS = {".csv": "csv", ".tsv": "tsv", ".jsonl": "jsonl", ".json": "jsonl"}
"""The formats `input_format` tells by extension; any other file is plain text."""
TEXT_COLUMN = "text"
"""The one column of a plain-text file."""


@dataclass(frozen=True)
class Columns:
    """What the predictor reads of a row: `roles` (role -> the columns named by the flags, names or
    0-based indexes; an empty tuple: the first `count` columns), `counts` (role -> how many texts
    it takes) and `id_column` (None: every field is kept)."""

    roles: dict[str, tuple[str, ...]]
    counts: dict[str, int]
    id_column: str | None = None


@dataclass(frozen=True)
class Row:
    """One input row: `position` (file index, row index), the `fields` kept in the output (in the
    file's order) and `texts` (role -> its texts)."""

    position: tuple[int, int]
    fields: dict
    texts: dict[str, list[str]]


class BadRow(StageError):
    """A row that cannot be read; `reason` is its `skipped_<reason>` count's name."""

    def __init__(self, message: str, reason: str):
        super().__init__(message)
        self.reason = reason


def input_format(path: str, configured: str) -> str:
    """The format of `path`: `configured`, or by extension when it is `auto`."""
    if configured != "auto":
        return configured
    extension = os.path.splitext(path)[1].lower()
    return EXTENSIONS.get(extension, "text")


def resolve(columns: Columns, names: list[str], where: str) -> dict[str, list[str]]:
    """role -> the column names it reads, among `names` (a header, a JSON object's keys); a column
    that is not there is a StageError naming the columns found."""

    def name_of(column: str) -> str:
        if column in names:
            return column
        if column.isdigit() and int(column) < len(names):
            return names[int(column)]
        raise BadRow(f"{where}: no column {column!r} (found: {', '.join(names)})", "missing_column")

    resolved = {}
    for role, given in columns.roles.items():
        wanted = columns.counts[role]
        chosen = list(given) or [str(i) for i in range(wanted)]
        if len(chosen) != wanted:
            raise StageError(f"{role} columns: {wanted} needed, {len(chosen)} given ({chosen})")
        resolved[role] = [name_of(column) for column in chosen]
    if columns.id_column is not None:
        resolved["id"] = [name_of(columns.id_column)]
    return resolved


def make_row(
    position: tuple[int, int], fields: dict, resolved: dict[str, list[str]], where: str
) -> Row:
    """The Row of `fields` (a header's columns or a JSON object) read as `resolved` says."""
    texts = {}
    for role, names in resolved.items():
        if role == "id":
            continue
        values = [fields.get(name) for name in names]
        for name, value in zip(names, values):
            if not isinstance(value, str):
                raise BadRow(f"{where}: column {name!r} holds no text ({value!r})", "not_text")
        texts[role] = values
    kept = {resolved["id"][0]: fields[resolved["id"][0]]} if "id" in resolved else fields
    return Row(position, kept, texts)


def decoded_lines(handle, path: str, on_error: str, inc: Counter) -> Iterator[tuple[int, str]]:
    """(line number from 1, text) of a binary file's lines; a line that is not UTF-8 is a BadRow,
    or counted as `skipped_not_utf8` and left out."""
    for number, raw in enumerate(handle, 1):
        try:
            text = raw.decode("utf-8-sig" if number == 1 else "utf-8")
        except UnicodeDecodeError as error:
            bad = BadRow(f"{path}: line {number}: not UTF-8 ({error.reason})", "not_utf8")
            if on_error == "fail":
                raise bad from None
            inc(f"skipped_{bad.reason}", 1)
            continue
        yield number, text


def _records(
    lines: Iterable[tuple[int, str]], path: str, fmt: str
) -> Iterator[tuple[int, dict | BadRow | None]]:
    """(line, fields) of each record: a BadRow where the line is not one; None for a blank
    line of a text file. A CSV/TSV header's fields are the names of the fields after it."""
    if fmt == "text":
        for number, line in lines:
            text = line.rstrip("\r\n")
            yield number, {TEXT_COLUMN: text} if text.strip() else None
        return
    if fmt == "jsonl":
        for number, line in lines:
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as error:
                record = BadRow(f"{path}: line {number}: not JSON ({error.msg})", "not_json")
            if not isinstance(record, (dict, BadRow)):
                record = BadRow(f"{path}: line {number}: not a JSON object", "not_json")
            yield number, record
        return
    numbers = []

    def texts():
        for number, line in lines:
            numbers.append(number)
            yield line

    reader = csv.reader(texts(), delimiter="\t" if fmt == "tsv" else ",")
    header = None
    for values in reader:
        number = numbers[-1]
        if header is None:
            header = values
            continue
        if len(values) != len(header):
            bad = f"{len(values)} fields, the header has {len(header)}"
            yield number, BadRow(f"{path}: line {number}: {bad}", "field_count")
        else:
            yield number, dict(zip(header, values))


def read_rows(
    path: str, file_index: int, fmt: str, columns: Columns, on_error: str, inc: Counter
) -> Iterator[Row]:
    """The rows of one input file in order (see the module docstring). `inc` counts `rows` read
    and `skipped_<reason>`; blank lines of a text file are counted as `blank_lines`."""
    resolved = None
    with open_file(path, "rb") as handle:
        lines = decoded_lines(handle, path, on_error, inc)
        for index, (number, record) in enumerate(_records(lines, path, fmt)):
            where = f"{path}: line {number}"
            try:
                if record is None:
                    inc("blank_lines", 1)
                    continue
                if isinstance(record, BadRow):
                    raise record
                if resolved is None or fmt == "jsonl":
                    resolved = resolve(columns, list(record), where)
                row = make_row((file_index, index), record, resolved, where)
            except BadRow as bad:
                if on_error == "fail" or bad.reason == "missing_column" and fmt != "jsonl":
                    raise
                inc(f"skipped_{bad.reason}", 1)
                continue
            inc("rows", 1)
            yield row


def blocks(rows: Iterable[Row], size: int) -> Iterator[list[Row]]:
    """Consecutive rows in lists of `size` (the last may be shorter): what the model predicts
    together, the same whatever the runner and its workers."""
    block: list[Row] = []
    for row in rows:
        block.append(row)
        if len(block) == size:
            yield block
            block = []
    if block:
        yield block
