"""Atomic outputs: a stage's output directory appears whole or not at all, and a finished output
is never deleted (it is moved aside); single files are replaced in one step.

The top of the `albert/` chain (errors <- fs <- locks <- outputs).
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import json
import logging
import os
import posixpath
import re
import shutil
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator

import fsspec
from fsspec.implementations.local import LocalFileSystem

from albert.errors import WRITE_FAILURES, StageError, naming_writes
from albert.fs import exists_in, expand, filesystem, is_local, makedirs
from albert.locks import output_lock

logger = logging.getLogger(__name__)

_LIBC = (
    ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
    if sys.platform.startswith("linux")
    else None
)


def write_atomic(url: str, data: bytes) -> None:
    """Replace the file at `url` with `data` in one step: a reader sees the old or the new bytes.

    Local disks: written to a temporary sibling, flushed, then renamed over the target. Object
    stores: one upload, which the store publishes whole.
    """
    fs, path = filesystem(url)
    if not is_local(url):
        fs.pipe(path, data)
        return
    makedirs(os.path.dirname(os.path.abspath(path)))
    temp = f"{path}.tmp-{uuid.uuid4().hex[:8]}"
    try:
        with naming_writes(url), open(temp, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temp)
        raise


def unwritable(url: str) -> str | None:
    """Why a stage could not write in the directory `url` (made, with its parents, where it can
    be): `cannot be made: not a directory`, `cannot be written: read-only file system`,
    `cannot be written: no space left on device` ...; None when it can (a file of one byte made
    and removed there: a full disk still makes empty files) or for an object store (its first
    write says)."""
    if not is_local(url):
        return None
    path = filesystem(url)[1]
    if os.path.exists(path) and not os.path.isdir(path):
        return "a file is in the way, not a directory"
    for what, attempt in (("made", _make), ("written", _probe)):
        try:
            attempt(path)
        except OSError as error:
            reason = WRITE_FAILURES.get(error.errno) or (error.strerror or str(error)).lower()
            named = str(error.filename or path)
            where = "" if named == path or named.startswith(path + os.sep) else f" ({named})"
            return f"cannot be {what}: {reason}{where}"
    return None


def check_writable(url: str, setting: str | None = None, keep_made: bool = False) -> None:
    """StageError `URL: REASON (SETTING)` when a stage could not write in `url` (`unwritable`):
    asked before any work starts. The directories the check made are removed again (empty), so a
    run refused later leaves no empty output behind (the stage makes them when it writes); with
    `keep_made` they stay (a flow's run directory or model line, which it works inside)."""
    missing = [] if keep_made else _missing_directories(url)
    reason = unwritable(url)
    for directory in missing:  # deepest first
        with contextlib.suppress(OSError):  # one that something wrote in stays
            os.rmdir(directory)
    if reason:
        raise StageError(f"{url}: {reason}{f' ({setting})' if setting else ''}")


def _missing_directories(url: str) -> list[str]:
    """The local directories of `url` and its parents that do not exist yet, deepest first."""
    missing, path = [], os.path.abspath(filesystem(url)[1]) if is_local(url) else "/"
    while not os.path.lexists(path) and os.path.dirname(path) != path:
        missing.append(path)
        path = os.path.dirname(path)
    return missing


def _make(path: str) -> None:
    os.makedirs(path, exist_ok=True)


def _probe(path: str) -> None:
    handle, probe = tempfile.mkstemp(prefix=".write-check-", dir=path)
    try:
        os.write(handle, b"\0")
    finally:
        os.close(handle)
        os.unlink(probe)


LEFTOVER_MARKERS = (".tmp-", ".old-")
"""What temporary siblings of an output are called: `<output>.tmp-<id>` (being written) and
`<output>.old-<id>` (the previous output while a commit swaps it out)."""


def remove_leftovers(url: str) -> list[str]:
    """Delete the temporary siblings `<url>.tmp-*` / `<url>.old-*` that killed runs left behind.

    Only call it while holding the output's lock (`albert.locks.output_lock`) or its parent's:
    then no live run is writing them. Returns what was removed.
    """
    fs, path = filesystem(url)
    base = path.rstrip("/")
    removed = []
    for marker in LEFTOVER_MARKERS:
        for leftover in fs.glob(f"{base}{marker}*"):
            fs.rm(leftover, recursive=True)
            removed.append(leftover)
    if removed:
        logger.info(
            "removed %d temporary folder(s) of interrupted runs: %s",
            len(removed),
            ", ".join(removed),
        )
    return removed


def _exchange(a: str, b: str) -> bool:
    """Swap two local paths atomically (Linux renameat2 RENAME_EXCHANGE); False if unsupported."""
    rename = getattr(_LIBC, "renameat2", None) if _LIBC is not None else None
    if rename is None:
        return False
    at_fdcwd, rename_exchange = -100, 2
    return rename(at_fdcwd, os.fsencode(a), at_fdcwd, os.fsencode(b), rename_exchange) == 0


def _commit(
    fs: fsspec.AbstractFileSystem, temp: str, path: str, local: bool, keep_previous: bool
) -> str | None:
    """Publish the finished `temp` as `path`; returns where the previous output was moved, if so.

    A previous output with files, unless it is the same output (`_same_files`), is moved aside
    first (`move_aside`) and never deleted; the same output stays as it is and `temp` is dropped.
    With `keep_previous=False` (or an empty previous directory) the previous output is replaced: on
    local disks by one atomic exchange (or, where the kernel lacks it, two renames: the old output
    moves to `<path>.old-<id>`, the new one in), so a reader sees the old or the new output, never a
    mix. Object stores have no rename: the old output is moved first, then the new one copied in, so
    no listing ever mixes them."""
    if local and not os.path.exists(path):
        with contextlib.suppress(FileNotFoundError, OSError):
            os.rename(temp, path)
            return None
    previous = _data_files(fs, path) if exists_in(fs, path) else {}
    if keep_previous and previous:
        if _same_files(fs, path, previous, temp, _data_files(fs, temp)):
            fs.rm(temp, recursive=True)
            return None
        moved = _move_aside(fs, path)
        if local:
            os.rename(temp, path)
        else:
            _move_tree(fs, temp, path)
        return moved
    if local:
        if _exchange(temp, path):
            shutil.rmtree(temp)
            return None
        old = f"{path}.old-{uuid.uuid4().hex[:8]}"
        os.rename(path, old)
        os.rename(temp, path)
        shutil.rmtree(old)
        return None
    if exists_in(fs, path):
        old = f"{path}.old-{uuid.uuid4().hex[:8]}"
        _move_tree(fs, path, old)
        _move_tree(fs, temp, path)
        fs.rm(old, recursive=True)
    else:
        _move_tree(fs, temp, path)
    return None


CONTENT_KEYS = ("md5Hash", "crc32c", "md5", "ETag", "etag")
"""Object metadata fields that identify a file's content (GCS, S3, ...): no need to read it."""


def _data_files(fs: fsspec.AbstractFileSystem, path: str) -> dict[str, dict]:
    """Relative name -> info of the files under the directory `path`, dot-files (bookkeeping such as
    the flows' `.stage-key`) left out."""
    found = fs.find(path, detail=True, withdirs=False)
    return {
        name[len(path) :].lstrip("/"): info
        for name, info in found.items()
        if not name.rsplit("/", 1)[-1].startswith(".")
    }


def _same_files(
    fs: fsspec.AbstractFileSystem, a: str, files_a: dict, b: str, files_b: dict
) -> bool:
    """Whether directories `a` and `b` hold the same output: the same file names with the same
    bytes, dot-files aside; JSON files compare without their timings (keys containing "seconds", at
    any depth), which differ between two runs by nature."""
    if files_a.keys() != files_b.keys():
        return False
    for name in sorted(files_a):
        first, second = f"{a}/{name}", f"{b}/{name}"
        if name.endswith(".json"):
            try:
                stats = [_without_timings(json.loads(fs.cat_file(f))) for f in (first, second)]
            except ValueError:  # not JSON after all: compared byte for byte
                stats = None
            if stats is not None:
                if stats[0] != stats[1]:
                    return False
                continue
        if not _same_bytes(fs, first, second, files_a[name], files_b[name]):
            return False
    return True


def _without_timings(value):
    if isinstance(value, dict):
        return {k: _without_timings(v) for k, v in value.items() if "seconds" not in k}
    return [_without_timings(v) for v in value] if isinstance(value, list) else value


def _same_bytes(fs: fsspec.AbstractFileSystem, a: str, b: str, info_a: dict, info_b: dict) -> bool:
    if info_a.get("size") != info_b.get("size"):
        return False
    key = next((k for k in CONTENT_KEYS if info_a.get(k) and info_b.get(k)), None)
    if key:
        return info_a[key] == info_b[key]
    with fs.open(a, "rb") as first, fs.open(b, "rb") as second:
        while True:
            chunk = first.read(1 << 20)
            if chunk != second.read(1 << 20):
                return False
            if not chunk:
                return True


def _move_tree(fs: fsspec.AbstractFileSystem, source: str, target: str) -> None:
    """Move every object under `source` to the same name under `target`, one object at a time.

    Object by object (`cp_file`), not `fs.mv(..., recursive=True)`: that guesses whether the target
    is an existing folder to move *into*, and a failed guess nests one output inside the other.
    """
    for name in fs.find(source):
        fs.cp_file(name, target + name[len(source) :])
    fs.rm(source, recursive=True)


@contextlib.contextmanager
def atomic_output_dir(url: str, lock: bool = True, keep_previous: bool = True) -> Iterator[str]:
    """Yield a temporary sibling directory; on success it becomes `url`, on failure it is removed.

    A failed stage therefore leaves nothing where a finished output would be. A finished output
    already at `url` is never deleted: unless it is the same output (same files and bytes, timings
    in JSON stats aside, `_same_files`), which then stays as it is, it is moved aside first
    (`move_aside`: `<url>.previous-<UTC time>`, logged). `keep_previous=False` replaces it instead:
    only for parts of a training run's output that move forward with the run (checkpoints, its
    export). With `lock` (the default) the output's lock is held throughout (a second live writer
    fails at once, naming this one) and temporary folders of killed runs are removed first; pass
    `lock=False` only inside an output whose lock the caller holds.
    """
    with output_lock(url) if lock else contextlib.nullcontext():
        fs, path = filesystem(url)
        path = path.rstrip("/")
        if lock:
            remove_leftovers(url)
        protocol = _protocol(url)
        temp_path = f"{path}.tmp-{uuid.uuid4().hex[:8]}"
        fs.makedirs(temp_path, exist_ok=True)
        try:
            with naming_writes(url):  # a refused write names the output (disk full ...)
                yield protocol + temp_path
        except BaseException:
            if exists_in(fs, temp_path):  # object stores have no empty directories
                fs.rm(temp_path, recursive=True)
            raise
        moved = _commit(fs, temp_path, path, isinstance(fs, LocalFileSystem), keep_previous)
        if moved:
            logger.info(
                "%s: the previous output differs from the new one; kept it as %s",
                url,
                protocol + moved,
            )
        logger.debug("committed %s", url)


MOVED_ASIDE_LABEL = "previous"
MOVED_ASIDE = re.compile(rf"^(?P<output>.+)\.{MOVED_ASIDE_LABEL}-\d{{8}}T\d{{6}}Z(?:-\d+)?$")
"""The name of a moved-aside output: `<output>.previous-<UTC time>[-<n>]`."""


def _protocol(url: str) -> str:
    return url.split("://", 1)[0] + "://" if "://" in url else ""


def move_aside(url: str) -> str:
    """Rename the output `url` to a new sibling `<url>.previous-<UTC time>` (never deleted);
    returns its new name."""
    fs, path = filesystem(url)
    return _protocol(url) + _move_aside(fs, path.rstrip("/"))


def _move_aside(fs: fsspec.AbstractFileSystem, path: str) -> str:
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    target = f"{path}.{MOVED_ASIDE_LABEL}-{stamp}"
    suffix = 1
    while exists_in(fs, target):
        suffix += 1
        target = f"{path}.{MOVED_ASIDE_LABEL}-{stamp}-{suffix}"
    if isinstance(fs, LocalFileSystem):
        os.rename(path, target)
    else:
        _move_tree(fs, path, target)
    return target


def moved_aside_copies(url: str) -> list[str]:
    """The earlier outputs of `url` that were moved aside (`<url>.previous-*`), sorted by name."""
    url = url.rstrip("/")
    name = posixpath.basename(url)
    matches = expand(f"{url}.{MOVED_ASIDE_LABEL}-*")
    found = [(m, MOVED_ASIDE.match(posixpath.basename(m))) for m in matches]
    return [m for m, match in found if match and match["output"] == name]
