"""A model line's input files: their content digests, and which of them the line has not taken
yet (flows.line.records: the files of its versions, refused ones retried on request)."""

from __future__ import annotations

import shlex
from collections.abc import Mapping

from albert.errors import StageError
from albert.fs import file_digest
from flows.line.config import LineConfig
from flows.line.records import ModelLine, new_files, seen_files
from pipelines.segment.config import match_inputs

NOTHING_NEW = "nothing new"


def input_digests(patterns: list[str]) -> dict[str, str]:
    """path -> sha256 of every file the input patterns name (as the segment stage reads them); a
    pattern that names no file yet is said in one line, not an error (nothing new)."""
    paths: set[str] = set()
    for pattern in patterns:
        try:
            paths.update(match_inputs([pattern]))
        except StageError as error:
            print(f"{error} (yet)")
    return {path: file_digest(path) for path in sorted(paths)}


def novelty(
    config: LineConfig, line: ModelLine, digests: Mapping[str, str]
) -> tuple[dict[str, str], str | None]:
    """(path -> sha256 of the input files (`digests`) the line has not taken, None) or, when
    there are none, ({}, the one line that says so)."""
    seen = seen_files(line.records(), line.current(), config.retry_refused, line.pruned())
    fresh = new_files(digests, seen)
    if fresh:
        return fresh, None
    taken = f"{len(digests)} input file(s), all taken already"
    matched = f"--input {shlex.join(config.input)} matched no file yet"  # a typo in it shows
    why = taken if digests else matched
    return {}, f"{line.url}: nothing new since {line.current()} ({why}); nothing done"
