"""The rows `albert predict` reads: CSV, TSV (a header row names the columns), JSONL (one object a
line) and plain text (one text a line, the column `text`), streamed a line at a time.

Each row is a `Row`: its position (the file's index among the sorted input files, the row's index
in its file: what the output is sorted by), the fields it keeps in the output (every field, or the
`--id-column`), and its texts by role (`text`: one or two texts; `question`, `context`; `choices`).
A row that cannot be read (not UTF-8, not a JSON object, a missing column, a value that is not a
text) is a `StageError` naming the file, the line and the reason, or, with `on_error="skip"`, is
counted under `skipped_<reason>` and left out. A file is read whole or in `Span`s, stretches of
its bytes that start at a row (`file_spans` finds them in a first reading): a span's rows, their
positions and counts are those of the same rows read whole. Pure functions: no Beam.
"""

from __future__ import annotations

import csv
import json
import os
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, replace

from albert.errors import StageError
from albert.fs import is_compressed, open_file

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


@dataclass(frozen=True)
class Span:
    """A stretch of one input file that is read on its own: its bytes from `start` to `end` (None:
    the file's end), `line` the number of its first line, `record` the index of its first record
    (rows, blank lines of a text file and bad rows, as `read_rows` numbers them). A span that
    starts past a CSV/TSV file's beginning reads its header from the beginning."""

    start: int = 0
    end: int | None = None
    line: int = 1
    record: int = 0


def spans(row_starts: Iterable[Span], rows_per_span: int) -> Iterator[Span]:
    """A file cut at every `rows_per_span`-th row: `row_starts` are the starts of the file's rows
    in order (`located_rows`). The first span begins at the file's beginning (its header, and any
    blank or bad line before the first row), each ends where the next begins, the last at the
    file's end; a file without a row is one span."""
    begin = Span()
    for count, start in enumerate(row_starts):
        if count and count % rows_per_span == 0:
            yield replace(begin, end=start.start)
            begin = start
    yield begin


def numbered_lines(handle, span: Span) -> Iterator[tuple[int, int, bytes]]:
    """(line number, the byte offset after the line, the line) of the span's lines of a binary
    file."""
    if span.start:
        handle.seek(span.start)
    offset = span.start
    for number, raw in enumerate(handle, span.line):
        if span.end is not None and offset >= span.end:
            return
        offset += len(raw)
        yield number, offset, raw


def decoded_lines(
    lines: Iterable[tuple[int, int, bytes]], path: str, on_error: str, inc: Counter
) -> Iterator[tuple[int, int, str]]:
    """`numbered_lines` with each line decoded; a line that is not UTF-8 is a BadRow, or counted
    as `skipped_not_utf8` and left out."""
    for number, end, raw in lines:
        try:
            text = raw.decode("utf-8-sig" if number == 1 else "utf-8")
        except UnicodeDecodeError as error:
            bad = BadRow(f"{path}: line {number}: not UTF-8 ({error.reason})", "not_utf8")
            if on_error == "fail":
                raise bad from None
            inc(f"skipped_{bad.reason}", 1)
            continue
        yield number, end, text


def _records(
    lines: Iterable[tuple[int, int, str]], path: str, fmt: str, header: list[str] | None = None
) -> Iterator[tuple[int, int, dict | BadRow | None]]:
    """(last line, the byte offset after it, fields) of each record: a BadRow where the line is not
    one; None for a blank line of a text file. A CSV/TSV file's first record is its header (the
    names of the fields after it) unless `header` is given."""
    if fmt == "text":
        for number, end, line in lines:
            text = line.rstrip("\r\n")
            yield number, end, {TEXT_COLUMN: text} if text.strip() else None
        return
    if fmt == "jsonl":
        for number, end, line in lines:
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as error:
                record = BadRow(f"{path}: line {number}: not JSON ({error.msg})", "not_json")
            if not isinstance(record, (dict, BadRow)):
                record = BadRow(f"{path}: line {number}: not a JSON object", "not_json")
            yield number, end, record
        return
    last = (0, 0)  # the (line number, offset after it) of the last line the CSV reader took

    def texts():
        nonlocal last
        for number, end, line in lines:
            last = number, end
            yield line

    reader = csv.reader(texts(), delimiter=_delimiter(fmt))
    for values in reader:
        number, end = last
        if header is None:
            header = values
            continue
        if len(values) != len(header):
            bad = f"{len(values)} fields, the header has {len(header)}"
            yield number, end, BadRow(f"{path}: line {number}: {bad}", "field_count")
        else:
            yield number, end, dict(zip(header, values))


def _delimiter(fmt: str) -> str:
    """The field separator of a CSV or TSV file."""
    return "\t" if fmt == "tsv" else ","


def _no_count(name: str, amount: int) -> None:
    """A Counter that counts nothing: for a file's first lines read again."""


def read_header(path: str, fmt: str, on_error: str) -> list[str] | None:
    """A CSV/TSV file's header, as a span from its beginning reads it; None for other formats."""
    if fmt not in ("csv", "tsv"):
        return None
    with open_file(path, "rb") as handle:
        lines = decoded_lines(numbered_lines(handle, Span()), path, on_error, _no_count)
        reader = csv.reader((line for _, _, line in lines), delimiter=_delimiter(fmt))
        return next(reader, [])


def located_rows(
    path: str, file_index: int, fmt: str, columns: Columns, on_error: str, inc: Counter, span: Span
) -> Iterator[tuple[Span, Row]]:
    """The rows of one span of an input file in order (see the module docstring), each with where
    it starts (a Span to the file's end). `inc` counts `rows` read and `skipped_<reason>`; blank
    lines of a text file are counted as `blank_lines`."""
    resolved = None
    header = read_header(path, fmt, on_error) if span.start else None
    with open_file(path, "rb") as handle:
        lines = decoded_lines(numbered_lines(handle, span), path, on_error, inc)
        start = span
        for index, (number, end, record) in enumerate(_records(lines, path, fmt, header)):
            where = f"{path}: line {number}"
            begin, start = start, Span(end, None, number + 1, span.record + index + 1)
            try:
                if record is None:
                    inc("blank_lines", 1)
                    continue
                if isinstance(record, BadRow):
                    raise record
                if resolved is None or fmt == "jsonl":
                    resolved = resolve(columns, list(record), where)
                row = make_row((file_index, begin.record), record, resolved, where)
            except BadRow as bad:
                if on_error == "fail" or bad.reason == "missing_column" and fmt != "jsonl":
                    raise
                inc(f"skipped_{bad.reason}", 1)
                continue
            inc("rows", 1)
            yield begin, row


def read_rows(
    path: str,
    file_index: int,
    fmt: str,
    columns: Columns,
    on_error: str,
    inc: Counter,
    span: Span = Span(),
) -> Iterator[Row]:
    """The rows of one span of an input file (the whole file by default), as `located_rows`."""
    for _, row in located_rows(path, file_index, fmt, columns, on_error, inc, span):
        yield row


def file_spans(
    path: str, file_index: int, fmt: str, columns: Columns, on_error: str, rows_per_span: int
) -> Iterator[Span]:
    """`spans` of one input file, its rows found by a first reading (nothing counted; a bad row
    fails it as it fails the rows' reading). A compressed file is one span: it cannot seek."""
    if is_compressed(path):
        yield Span()
        return
    rows = located_rows(path, file_index, fmt, columns, on_error, _no_count, Span())
    yield from spans((start for start, _ in rows), rows_per_span)


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
