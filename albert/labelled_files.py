"""Rows of a team's labelled files, streamed one at a time: CSV (`.csv`), TSV (`.tsv`, `.tab`) and
JSON Lines (`.jsonl`, `.ndjson`, `.json`), local, globbed or gs:// (`albert.fs`).

CSV and TSV are read quote-aware (a quoted field may hold the delimiter, `""` and newlines), with
or without a header; a UTF-8 byte-order mark is dropped. A column is a header name or a 0-based
index. A JSON Lines row is an object; a column is one of its keys. Every row is named by its file
and line (`path:line`, the line where the row ends). Bad input is a `StageError` of one line: a
missing column (naming the columns found), a row with another number of fields than the first
(`path:line`), a line that is not a JSON object, bytes that are not in the encoding (naming
`--encoding`)."""

from __future__ import annotations

import codecs
import csv
import io
import json
from collections.abc import Iterator, Sequence
from typing import Any

from albert.errors import StageError
from albert.fs import expand, open_file

DELIMITERS = {".csv": ",", ".tsv": "\t", ".tab": "\t"}
JSON_LINES = (".jsonl", ".ndjson", ".json")


def files_of(pattern: str) -> list[str]:
    """The files a path or glob names, sorted; none is a StageError naming the pattern."""
    paths = expand(pattern)
    if not paths:
        raise StageError(f"{pattern}: no such file")
    return paths


def suffix_of(path: str) -> str:
    """The file's format suffix (`.csv`, `.tsv`, `.jsonl` ...; a `.gz` after it is looked
    through); another one is a StageError."""
    name = path.rsplit("/", 1)[-1].lower().removesuffix(".gz")
    suffix = "." + name.rsplit(".", 1)[-1] if "." in name else ""
    if suffix not in DELIMITERS and suffix not in JSON_LINES:
        raise StageError(f"{path}: expected a .csv, .tsv or .jsonl file")
    return suffix


def read_columns(
    pattern: str, columns: Sequence[str], header: bool, encoding: str = "utf-8"
) -> Iterator[tuple[str, list[Any]]]:
    """(`path:line`, the values of `columns` in their order) for every row of the files `pattern`
    names, in file order; blank lines are skipped. CSV and TSV values are strings; JSON Lines
    values are as the JSON holds them (a list, a number ...)."""
    for path in files_of(pattern):
        if suffix_of(path) in JSON_LINES:
            yield from _json_lines(path, columns, encoding)
        else:
            yield from _delimited(path, columns, header, encoding)


def _text(handle, encoding: str) -> io.TextIOWrapper:
    """The bytes of `handle` as text: UTF-8 without its byte-order mark, newlines kept for the
    CSV reader (a quoted field may hold one)."""
    utf8 = codecs.lookup(encoding).name == "utf-8"
    return io.TextIOWrapper(handle, encoding="utf-8-sig" if utf8 else encoding, newline="")


def _decoding(path: str, encoding: str, rows: Iterator) -> Iterator:
    """`rows`, a decoding error turned into one line naming `--encoding`."""
    try:
        yield from rows
    except UnicodeDecodeError as error:
        raise StageError(
            f"{path}: not {encoding} (byte 0x{error.object[error.start]:02x}); give the file's "
            "encoding, e.g. --encoding latin-1"
        ) from None


def _delimited(
    path: str, columns: Sequence[str], header: bool, encoding: str
) -> Iterator[tuple[str, list[str]]]:
    with open_file(path, "rb") as handle:
        reader = csv.reader(_text(handle, encoding), delimiter=DELIMITERS[suffix_of(path)])
        width, indices = None, None
        for fields in _decoding(path, encoding, reader):
            if not fields or fields == [""]:
                continue
            if width is None:
                width = len(fields)
                indices = _indices(path, columns, fields if header else None, width)
                if header:
                    continue
            if len(fields) != width:
                raise StageError(
                    f"{path}:{reader.line_num}: {len(fields)} fields, but the "
                    f"{'header' if header else 'first row'} has {width}"
                )
            yield f"{path}:{reader.line_num}", [fields[i] for i in indices]


def _indices(path: str, columns: Sequence[str], names: list[str] | None, width: int) -> list[int]:
    """The field index of each column: a header name, else a 0-based index below `width`."""
    indices = []
    for column in columns:
        if names is not None and column in names:
            indices.append(names.index(column))
        elif column.isdigit() and int(column) < width:
            indices.append(int(column))
        else:
            found = ", ".join(names) if names is not None else f"0 to {width - 1}, no header"
            raise StageError(f"{path}: no column {column!r}; its columns: {found}")
    return indices


def _json_lines(
    path: str, columns: Sequence[str], encoding: str
) -> Iterator[tuple[str, list[Any]]]:
    with open_file(path, "rb") as handle:
        lines = _decoding(path, encoding, _text(handle, encoding))
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as error:
                raise StageError(f"{path}:{number}: not JSON ({error.msg})") from None
            if not isinstance(row, dict):
                raise StageError(f"{path}:{number}: not a JSON object")
            missing = [column for column in columns if column not in row]
            if missing:
                raise StageError(
                    f"{path}:{number}: no key {missing[0]!r}; its keys: {', '.join(row)}"
                )
            yield f"{path}:{number}", [row[column] for column in columns]
