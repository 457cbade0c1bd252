"""A model line: the numbered versions of one model that further pretraining improves night after
night, local or on an object store, and the `current` pointer users and downstream jobs read.

```
LINE/line.json      written once, when the line is made: the base, the general data (training
                    shards with their record counts, held-out set), the instance shape, the preset
LINE/v0001/         the base: export/, vocab/, version.json (status "base")
LINE/v0002/         a night: export/, vocab/, data/ (the TFRecords of its new documents, held-out
                    documents included), training/metrics.jsonl, version.json: its parent, the
                    corpus files and their sha256, the settings, the git revision, the held-out
                    scores of the candidate and its parent, status "promoted" or "refused" (why)
LINE/current        the name of the current version, replaced in one step (albert.outputs)
LINE/pruned.json    what `albert line prune` removed: the pruned versions' version.json (their
                    corpus digests stay taken)
LINE/nights/        each night's working directory (stage outputs, checkpoints): a killed night
                    resumes there
```

Each version's version.json lists every file of its directory with its sha256 and size (`files`):
whatever a night writes into its version is listed and checked (flows.line.check) without more.

A version appears whole or not at all: its directory is committed first (a rename on disks), its
version.json written after it, and only a directory with version.json is a version. `current` moves
last, and only to a promoted version; a night killed just before that finds its version written
(`written_night`) when it runs again, and moves `current` then. Nothing here deletes or overwrites
a version; `prune_plan` names the versions outside current's ancestry, which only
`albert line prune --yes` removes.
One writer per line: the night holds `LINE.lock` (albert.locks) throughout. What a killed commit
leaves (`leftovers`: the temporary files of our atomic writes, a version directory without
version.json) is removed under that lock (`remove_leftovers`), and never a finished version.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from albert.errors import StageError
from albert.fs import exists, filesystem, join, open_file, remove
from albert.outputs import atomic_output_dir, remove_leftovers, write_atomic
from flows.line.files import file_listing, require_regular

LINE_FILE = "line.json"
VERSION_FILE = "version.json"
CURRENT = "current"
NIGHTS = "nights"
PRUNED = "pruned.json"
VERSION_NAME = re.compile(r"^v(\d{4,})$")
TEMPORARY = re.compile(r"^(current|line\.json|pruned\.json|v\d{4,})\.tmp-[0-9a-f]{8}$")
VERSION_TEMPORARY = re.compile(r"^version\.json\.tmp-[0-9a-f]{8}$")
"""The temporary siblings our atomic writes make in a line (albert.outputs): of the pointer,
line.json, pruned.json and a version's directory, and of version.json inside a version."""
BASE, PROMOTED, REFUSED = "base", "promoted", "refused"
"""A version's status: the line's first version, a night that became current, one that did not."""

Records = Mapping[str, Mapping[str, Any]]
"""Version name -> its version.json."""


def version_name(number: int) -> str:
    """'v0001' for 1 (four digits at least; v10000 follows v9999)."""
    return f"v{number:04d}"


def version_number(name: str) -> int:
    match = VERSION_NAME.match(name)
    if not match:
        raise StageError(f"{name}: not a version name (v0001, v0002, ...)")
    return int(match[1])


def read_json(url: str) -> dict[str, Any]:
    """A JSON object from `url`; StageError naming the file when it is not one (or not a regular
    file, which is never opened)."""
    require_regular(url)
    with open_file(url, "r") as handle:
        try:
            value = json.load(handle)
        except ValueError as error:
            raise StageError(f"{url}: not valid JSON ({error})") from None
    if not isinstance(value, dict):
        raise StageError(f"{url}: expected a JSON object")
    return value


def write_json(url: str, value: Mapping[str, Any]) -> None:
    write_atomic(url, (json.dumps(value, indent=2, sort_keys=True) + "\n").encode())


# --------------------------------------------------------------------------------------------
# Pure logic over the versions' records


def ancestry(records: Records, name: str) -> list[str]:
    """`name`, its parent, its parent's parent ... up to the line's base; StageError if a parent
    is missing or the chain loops."""
    chain: list[str] = []
    while name is not None:
        if name in chain:
            raise StageError(f"{name}: its lineage loops ({' -> '.join(chain)})")
        if name not in records:
            raise StageError(f"{name}: no such version in the line")
        chain.append(name)
        name = records[name].get("parent")
    return chain


def seen_files(
    records: Records, current: str, retry_refused: bool = False, pruned: Records | None = None
) -> dict[str, dict[str, Any]]:
    """Content digest -> {version, path} of every corpus file the line has already taken: those
    current and its ancestors were trained on, and those of refused nights, pruned ones included
    (unless `retry_refused`: then a refused night's files are new again)."""
    everything = {**(pruned or {}), **records}
    taken = set(ancestry(records, current))
    if not retry_refused:
        taken |= {name for name, r in everything.items() if r.get("status") == REFUSED}
    seen: dict[str, dict[str, Any]] = {}
    for name in sorted(taken, key=version_number):
        for entry in (everything[name].get("corpus") or {}).get("files") or ():
            seen.setdefault(entry["sha256"], {"version": name, "path": entry["path"]})
    return seen


def new_files(digests: Mapping[str, str], seen: Mapping[str, Any]) -> dict[str, str]:
    """path -> digest of the files whose content the line has not taken (`seen_files`); of several
    files with the same new content, the first path in sorted order. A renamed or copied file is
    not new."""
    fresh: dict[str, str] = {}
    taken = set(seen)
    for path in sorted(digests):
        if digests[path] not in taken:
            fresh[path] = digests[path]
            taken.add(digests[path])
    return fresh


def next_version(records: Records, pruned: Records | None = None) -> str:
    """The name the next version gets: one past the highest version, pruned ones included (a
    name is never given twice)."""
    names = [*records, *(pruned or {})]
    return version_name(1 + max((version_number(n) for n in names), default=0))


def written_night(records: Records, parent: str, digests: Iterable[str]) -> str | None:
    """The version a night from `parent` on exactly the files `digests` already wrote (a night
    killed after writing its version, before moving `current`); None if there is none."""
    wanted = sorted(set(digests))
    for name, record in records.items():
        files = (record.get("corpus") or {}).get("files") or ()
        if record.get("parent") == parent and sorted({f["sha256"] for f in files}) == wanted:
            return name
    return None


def prune_plan(records: Records, current: str, names: Iterable[str] = ()) -> list[str]:
    """The versions pruning removes: `names`, or every version outside current's ancestry; a
    StageError names any of `names` that is current, one of its ancestors, or no version."""
    keep = ancestry(records, current)
    names = list(names)
    for name in names:
        if name not in records:
            raise StageError(f"{name}: no such version in the line")
        if name in keep:
            role = "the current version" if name == current else f"an ancestor of {current}"
            raise StageError(f"{name}: is {role}; pruning keeps current and its ancestors")
    chosen = names or [n for n in records if n not in keep]
    return sorted(set(chosen), key=version_number)


# --------------------------------------------------------------------------------------------
# The line on disk or in a bucket


class ModelLine:
    """The versions and pointer of the line at `url` (local path or URL)."""

    def __init__(self, url: str):
        self.url = url.rstrip("/")

    def path(self, *parts: str) -> str:
        return join(self.url, *parts)

    def exists(self) -> bool:
        return exists(self.path(LINE_FILE))

    def settings(self) -> dict[str, Any]:
        if not self.exists():
            raise StageError(f"{self.url}: not a model line (no {LINE_FILE}); make it with --base")
        return read_json(self.path(LINE_FILE))

    def entries(self) -> list[str]:
        """Names of the line's version directories, finished or not, by number."""
        fs, path = filesystem(self.url)
        if not exists(self.url):
            return []
        return sorted((n for n in _names(fs, path) if VERSION_NAME.match(n)), key=version_number)

    def records(self) -> dict[str, dict[str, Any]]:
        """Version name -> version.json of every finished version, by number."""
        return {
            name: read_json(self.path(name, VERSION_FILE))
            for name in self.entries()
            if exists(self.path(name, VERSION_FILE))
        }

    def pruned(self) -> dict[str, dict[str, Any]]:
        """Version name -> version.json of every version `albert line prune` removed."""
        if not exists(self.path(PRUNED)):
            return {}
        versions = read_json(self.path(PRUNED)).get("versions")
        if not isinstance(versions, dict) or not all(
            VERSION_NAME.match(n) and isinstance(r, dict) for n, r in versions.items()
        ):
            raise StageError(f'{self.path(PRUNED)}: expected {{"versions": {{NAME: RECORD}}}}')
        return versions

    def keep_pruned(self, records: Records) -> None:
        """Add `records` (about to be pruned) to pruned.json, in one step."""
        write_json(self.path(PRUNED), {"versions": {**self.pruned(), **records}})

    def current(self) -> str | None:
        """The name `current` holds (None: no pointer yet); StageError when it holds no version
        name."""
        pointer = self.path(CURRENT)
        if not exists(pointer):
            return None
        require_regular(pointer)
        with open_file(pointer, "rb") as handle:
            data = handle.read(64)
        name = data.decode("ascii", errors="replace").strip()
        if not VERSION_NAME.match(name):
            raise StageError(f"{pointer}: holds {data[:20]!r}, not a version name (v0001, ...)")
        return name

    def leftovers(self) -> list[str]:
        """What killed commits left in the line: the temporary files of our atomic writes
        (`TEMPORARY`, and `vNNNN/version.json.tmp-*`) and version directories without
        version.json."""
        fs, path = filesystem(self.url)
        if not exists(self.url):
            return []
        found = []
        for name in sorted(_names(fs, path)):
            if TEMPORARY.match(name):
                found.append(self.path(name))
            elif VERSION_NAME.match(name) and fs.isdir(join(path, name)):
                inside = _names(fs, join(path, name))
                if VERSION_FILE not in inside:
                    found.append(self.path(name))
                found += [self.path(name, n) for n in inside if VERSION_TEMPORARY.match(n)]
        return found

    def remove_leftovers(self) -> list[str]:
        """Remove `leftovers`; call it holding the line's lock (then no live commit writes them).
        Returns what was removed."""
        found = self.leftovers()
        for url in found:
            remove(url)
        return found

    def set_current(self, name: str) -> None:
        """Point `current` at `name` in one step (a reader sees the old name or the new one)."""
        write_atomic(self.path(CURRENT), (name + "\n").encode())

    def model(self, name: str, record: Mapping[str, Any] | None = None) -> str:
        """The exported model of version `name` (as its version.json names it)."""
        record = record or read_json(self.path(name, VERSION_FILE))
        return self.path(name, record.get("export", "export/model.keras"))

    def spm_model(self, name: str) -> str:
        return self.path(name, "vocab", "spiece.model")

    def commit(
        self,
        name: str,
        record: Mapping[str, Any],
        fill: Callable[[str], None],
        *,
        promote: bool,
    ) -> None:
        """Write version `name`: `fill(directory)` writes its files into a temporary directory that
        becomes LINE/NAME whole, then its version.json (`record`, with every file `fill` wrote
        listed with its sha256 and size), then (if `promote`) `current`. Call it
        holding the line's lock: what a killed commit left of `name` is removed first (temporary
        folders; on object stores, a directory without version.json, copied in part)."""
        target = self.path(name)
        if exists(self.path(name, VERSION_FILE)):
            raise StageError(f"{target}: the version exists already; versions are never rewritten")
        remove_leftovers(target)
        remove(target)  # a commit killed before its version.json: never a version
        with atomic_output_dir(target, lock=False) as temp:
            fill(temp)
            files = file_listing(temp)
        write_json(self.path(name, VERSION_FILE), {**record, "version": name, "files": files})
        if promote:
            self.set_current(name)


def _names(fs, path: str) -> list[str]:
    return [e.rstrip("/").rsplit("/", 1)[-1] for e in fs.ls(path, detail=False)]
