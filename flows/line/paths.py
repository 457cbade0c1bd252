"""Where a model line's paths lead and whose they are: the checks of flows.line.check that look
at the line's layout rather than at one record.

- No symlink on the way to a path of the line (line.json, `current`, pruned.json, a version's
  directory or version.json, `nights/` and a night's directory) leads out of the line: a line is
  one directory, copied, moved and pruned as one.
- A version's `version` field is its directory's name (a version copied under a second name is
  not a version of its own).
- Two versions share a night's directory only as a night re-run on the same files from the same
  parent after it was refused (`--retry-refused`): the earlier ones refused.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from albert.fs import exists, filesystem
from flows.line.files import outside_link
from flows.line.records import (
    CURRENT,
    LINE_FILE,
    NIGHTS,
    PRUNED,
    REFUSED,
    VERSION_FILE,
    ModelLine,
    version_number,
)


def link_faults(line: ModelLine) -> list[str]:
    """A fault per path of the line's layout that a symlink takes out of the line."""
    paths = [line.path(name) for name in (LINE_FILE, CURRENT, PRUNED, NIGHTS)]
    for name in line.entries():
        paths += [line.path(name), line.path(name, VERSION_FILE)]
    nights = line.path(NIGHTS)
    if exists(nights) and outside_link(nights, line.url) is None:
        fs, local = filesystem(nights)
        if fs.isdir(local):
            paths += [line.path(NIGHTS, n.rstrip("/").rsplit("/", 1)[-1]) for n in fs.ls(local)]
    found, reported = [], []
    for path in paths:
        target = outside_link(path, line.url)
        # a path under one already reported (a version directory's version.json) says nothing new
        if target is not None and not any(path.startswith(f"{r}/") for r in reported):
            found.append(f"{path}: a symlink to {target}, outside the line")
            reported.append(path)
    return found


def name_fault(path: str, name: str, record: Mapping[str, Any]) -> list[str]:
    """A version.json whose `version` field is not its directory's name (absent: a version from
    before the field)."""
    written = record.get("version", name)
    if written == name:
        return []
    return [f"{path}: version {written!r} is not its directory's name ({name}): a copied version"]


def night_dir(line: ModelLine, record: Mapping[str, Any]) -> str | None:
    """The working directory of a version's night, in LINE/nights (where the line is now)."""
    work = (record.get("night") or {}).get("work_dir")
    return line.path(NIGHTS, work.rstrip("/").rsplit("/", 1)[-1]) if work else None


def night_faults(line: ModelLine, records: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """A fault per night's directory that versions share other than as re-runs of one refused
    night (same parent, same corpus files, every one but the last refused)."""
    sharers: dict[str, list[str]] = {}
    for name, record in records.items():
        directory = night_dir(line, record)
        if directory is not None:
            sharers.setdefault(directory, []).append(name)
    found = []
    for directory, names in sharers.items():
        names = sorted(names, key=version_number)
        if len(names) > 1 and not _reruns([records[n] for n in names]):
            found.append(
                f"{directory}: the night of {', '.join(names[:-1])} and {names[-1]}, which are no "
                "re-run of one refused night (each night has a directory of its own)"
            )
    return found


def _reruns(records: list[Mapping[str, Any]]) -> bool:
    def files(record: Mapping[str, Any]) -> set[str]:
        return {f["sha256"] for f in (record.get("corpus") or {}).get("files") or ()}

    first = records[0]
    return all(
        r.get("parent") == first.get("parent") and files(r) == files(first) for r in records
    ) and all(r.get("status") == REFUSED for r in records[:-1])
