"""A model line's integrity: what `albert line check LINE` reports, and what `albert line show`,
`albert line prune` and every night check first (flows.line.records has the layout).

A line is sound when:
- line.json holds the line's settings (its format, base, preset, instance shape, general data);
- `current` names a finished version that is promoted (or the base);
- every version.json holds what the nights, the report and pruning read (status, parent, corpus
  digests, data shards, export, the night's directory), every path in it inside the version;
- the base names no parent and every other version names one in the line, and no lineage loops;
- every file a version lists exists with its recorded size and, when asked (`digests`: `albert
  line check` does), its recorded sha256; a version from before the listing: the files it names;
- pruned.json holds the pruned versions' records;
- no temporary file or half-written version is left (`ModelLine.leftovers`: a night and
  `albert line prune --yes` remove them under the line's lock).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from albert.errors import StageError
from albert.fs import exists, file_digest, filesystem
from flows.line.files import irregular, outside_link
from flows.line.paths import link_faults, name_fault, night_faults
from flows.line.records import (
    BASE,
    CURRENT,
    LINE_FILE,
    PROMOTED,
    PRUNED,
    REFUSED,
    VERSION_FILE,
    ModelLine,
    read_json,
)

LINE_FORMAT = "albert-model-line-v1"
SHA256 = re.compile(r"^[0-9a-f]{64}$")
STATUSES = (BASE, PROMOTED, REFUSED)
OPTIONAL_OBJECTS = (
    "corpus",
    "data",
    "trained_on",
    "scores",
    "parent_scores",
    "heldout",
    "gate",
    "settings",
    "night",
    "git",
)
"""version.json's fields that are JSON objects when present (null: absent)."""


def faults(line: ModelLine, *, digests: bool = False, leftovers: bool = True) -> list[str]:
    """One line per fault of `line` (none: sound). `digests`: also compare every listed file's
    sha256; `leftovers=False`: what killed commits left is no fault (the caller removes it)."""
    if not exists(line.path(LINE_FILE)):
        return [f"{line.url}: not a model line (no {LINE_FILE})"]
    found = link_faults(line) + _read(line.path(LINE_FILE), settings_faults)[1]
    if leftovers:
        found += [
            f"{url}: left by a killed commit (a night or `albert line prune --yes` removes it)"
            for url in line.leftovers()
        ]
    records: dict[str, dict[str, Any]] = {}
    written = []
    for name in line.entries():
        path = line.path(name, VERSION_FILE)
        if not exists(path):
            continue  # half-written: a leftover
        written.append(name)
        record, problems = _read(path, record_faults)
        found += problems + (name_fault(path, name, record) if record is not None else [])
        if record is not None and not problems:
            records[name] = record
    found += pointer_faults(line, records, set(written))
    found += pruned_faults(line)
    found += lineage_faults(line, records, set(written))
    found += night_faults(line, records)
    for name, record in records.items():
        found += file_faults(line, name, record, digests)
    return found


def require_sound(line: ModelLine, *, leftovers: bool = True) -> None:
    """StageError in one line (the first fault, how many there are, the command that lists them)
    unless the line is sound (sizes checked, not digests)."""
    found = faults(line, leftovers=leftovers)
    if found:
        more = f" (and {len(found) - 1} more)" if len(found) > 1 else ""
        raise StageError(
            f"{found[0]}{more}: the line is not sound; `albert line check {line.url}` lists "
            "what is wrong"
        )


def sound_settings(line: ModelLine) -> dict[str, Any]:
    """line.json's settings; StageError naming its first fault."""
    settings, problems = _read(line.path(LINE_FILE), settings_faults)
    if settings is None or problems:
        raise StageError(problems[0])
    return settings


def settings_faults(settings: Mapping[str, Any]) -> list[str]:
    """What is wrong with line.json (the fields the nights read)."""
    problems = []
    if settings.get("format") != LINE_FORMAT:
        problems.append(f"format {settings.get('format')!r} is not {LINE_FORMAT!r}")
    base, shape, general = (settings.get(k) for k in ("base", "tfrecords", "general"))
    if not _object_of(base, ("path", "model_file", "spm_model"), str):
        problems.append("base: expected an object with path, model_file and spm_model")
    if not isinstance(settings.get("preset"), str):
        problems.append("preset: expected a preset's name")
    if not _object_of(shape, ("max_seq_length", "max_predictions_per_seq"), int):
        problems.append("tfrecords: expected max_seq_length and max_predictions_per_seq")
    if not (
        _object_of(general, ("data", "listing"), str)
        and _strings(general.get("shards"))
        and _counts(general.get("counts"), general.get("shards"))
    ):
        problems.append("general: expected data, listing, shards and their counts")
    return problems


def record_faults(record: Mapping[str, Any]) -> list[str]:
    """What is wrong with a version.json (the fields the nights, reports and pruning read)."""
    problems = []
    if record.get("status") not in STATUSES:
        problems.append(f"status {record.get('status')!r} is not one of {', '.join(STATUSES)}")
    if record.get("parent") is not None and not isinstance(record.get("parent"), str):
        problems.append(f"parent {record.get('parent')!r} is not a version's name")
    problems += [
        f"{key}: expected an object"
        for key in OPTIONAL_OBJECTS
        if record.get(key) is not None and not isinstance(record[key], dict)
    ]
    problems += [
        f"{key}: expected {{HELD_OUT: scores or null}}"
        for key in ("scores", "parent_scores")
        if isinstance(record.get(key), dict)
        and any(v is not None and not isinstance(v, dict) for v in record[key].values())
    ]
    if problems:
        return problems
    corpus_files = (record.get("corpus") or {}).get("files") or []
    if not isinstance(corpus_files, list) or not all(
        _object_of(f, ("path", "sha256"), str) and SHA256.match(f["sha256"]) for f in corpus_files
    ):
        problems.append("corpus.files: expected [{path, sha256}, ...]")
    data = record.get("data") or {}
    shards, heldout = data.get("shards", []), data.get("heldout", [])
    if not (_paths(shards) and _paths(heldout) and _counts(data.get("counts", []), shards)):
        problems.append("data: expected shards and their counts, heldout, inside the version")
    if not _paths([record.get("export", "export/model.keras")]):
        problems.append(f"export {record.get('export')!r} is not a path inside the version")
    listing = record.get("files")
    if listing is not None and not (
        isinstance(listing, dict)
        and _paths(list(listing))
        and all(_listed(entry) for entry in listing.values())
    ):
        problems.append("files: expected {path inside the version: {sha256, bytes}}")
    work = (record.get("night") or {}).get("work_dir")
    if work is not None and not (isinstance(work, str) and _paths([work.rsplit("/", 1)[-1]])):
        problems.append(f"night.work_dir {work!r} names no night's directory")
    return problems


def pruned_faults(line: ModelLine) -> list[str]:
    """What is wrong with pruned.json (the pruned versions' records)."""
    try:
        pruned = line.pruned()
    except StageError as error:
        return [str(error)]
    return [
        f"{line.path(PRUNED)}: {name}: {problem}"
        for name, record in pruned.items()
        for problem in record_faults(record)
    ]


def pointer_faults(
    line: ModelLine, records: Mapping[str, Mapping[str, Any]], written: set[str]
) -> list[str]:
    """What is wrong with `current` (a version whose version.json is at fault is said there)."""
    pointer = line.path(CURRENT)
    try:
        current = line.current()
    except StageError as error:
        return [str(error)]
    if current is None:
        return [f"{pointer}: missing (a line killed while being made: its next night makes it)"]
    if current not in written:
        return [f"{pointer}: names {current}, which is no finished version of the line"]
    if current not in records:
        return []
    status = records[current]["status"]
    if status not in (BASE, PROMOTED):
        return [f"{pointer}: names {current}, which is {status}, not promoted"]
    return []


def lineage_faults(
    line: ModelLine, records: Mapping[str, Mapping[str, Any]], written: set[str]
) -> list[str]:
    """Parents: the base names none, every other version one in the line; no loops."""
    problems = []
    bases = [name for name, record in records.items() if record["status"] == BASE]
    if len(bases) > 1:
        problems.append(f"{line.url}: {len(bases)} base versions ({', '.join(bases)}); one only")
    for name, record in records.items():
        parent = record.get("parent")
        if record["status"] == BASE and parent is not None:
            problems.append(f"{line.path(name, VERSION_FILE)}: the base names a parent ({parent})")
        elif record["status"] != BASE and parent not in written:
            problems.append(
                f"{line.path(name, VERSION_FILE)}: parent {parent!r} is no version of the line "
                "(every version but the base names its parent)"
            )
    looped: set[str] = set()
    for name in records:
        chain: list[str] = []
        while name in records and name not in chain and name not in looped:
            chain.append(name)
            name = records[name].get("parent")
        if name in chain:
            loop = chain[chain.index(name) :]
            looped |= set(loop)
            problems.append(f"{line.url}: the lineage loops ({' -> '.join([*loop, name])})")
    return problems


def file_faults(line: ModelLine, name: str, record: Mapping[str, Any], digests: bool) -> list[str]:
    """The files a version lists (with their size and, if asked, sha256), or, in a version from
    before the listing, the files it names."""
    listing = record.get("files")
    if listing is None:
        data = record.get("data") or {}
        named = [record.get("export", "export/model.keras"), *data.get("shards", [])]
        return [
            f"{line.path(name, path)}: missing"
            for path in [*named, *data.get("heldout", [])]
            if not exists(line.path(name, path))
        ]
    problems = []
    for path, entry in listing.items():
        url = line.path(name, path)
        fs, inside = filesystem(url)
        try:
            info = fs.info(inside)
        except (FileNotFoundError, NotADirectoryError):
            problems.append(f"{url}: missing (listed in {VERSION_FILE})")
            continue
        size, odd, target = info.get("size"), irregular(url), outside_link(url, line.url)
        if odd is not None:  # never read: a FIFO or a device may never end
            problems.append(f"{url}: {odd}")
        elif target is not None:
            problems.append(f"{url}: a symlink to {target}, outside the line")
        elif size != entry["bytes"]:
            problems.append(f"{url}: {size} bytes, {VERSION_FILE} says {entry['bytes']}")
        elif digests and file_digest(url, entry["bytes"]) != entry["sha256"]:
            problems.append(f"{url}: its sha256 is not the one {VERSION_FILE} records")
    return problems


def _read(path: str, check) -> tuple[dict[str, Any] | None, list[str]]:
    """(the JSON object at `path`, `check`'s problems with it, each prefixed with `path`); a file
    that is no JSON object is one problem."""
    try:
        value = read_json(path)
    except StageError as error:
        return None, [str(error)]
    return value, [f"{path}: {problem}" for problem in check(value)]


def _object_of(value: Any, keys: tuple[str, ...], kind: type) -> bool:
    return isinstance(value, dict) and all(
        isinstance(value.get(k), kind) and not isinstance(value.get(k), bool) for k in keys
    )


def _strings(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


def _counts(counts: Any, items: Any) -> bool:
    return (
        isinstance(counts, list)
        and isinstance(items, list)
        and len(counts) == len(items)
        and all(isinstance(c, int) and not isinstance(c, bool) and c >= 0 for c in counts)
    )


def _paths(value: Any) -> bool:
    """A list of relative paths that stay inside their directory (printable: no NUL)."""
    return _strings(value) and all(
        path.isprintable()
        and not path.startswith("/")
        and "\\" not in path
        and ":" not in path
        and all(part not in ("", ".", "..") for part in path.split("/"))
        for path in value
    )


def _listed(entry: Any) -> bool:
    return (
        _object_of(entry, ("bytes",), int)
        and isinstance(entry.get("sha256"), str)
        and bool(SHA256.match(entry["sha256"]))
    )
