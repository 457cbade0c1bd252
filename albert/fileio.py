"""File access for local paths and URLs (gs://, memory://) through fsspec, and atomic outputs."""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import hashlib
import json
import logging
import os
import posixpath
import shutil
import sys
import time
import uuid
from collections.abc import Iterator, Sequence
from typing import IO

import fsspec
from fsspec.implementations.local import LocalFileSystem

logger = logging.getLogger(__name__)

_LIBC = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True) if sys.platform.startswith("linux") else None


def filesystem(url: str) -> tuple[fsspec.AbstractFileSystem, str]:
    """The fsspec filesystem serving `url` and the path within it."""
    return fsspec.core.url_to_fs(url)


def join(base: str, *parts: str) -> str:
    """Join path parts with '/' whatever the scheme (os.path.join would break gs:// on Windows)."""
    return posixpath.join(base.rstrip("/") if base != "/" else base, *parts)


def open_file(url: str, mode: str = "rb", **kwargs) -> IO:
    """Open a local path or URL; compression is inferred from the name ('.bz2', '.gz')."""
    return fsspec.open(url, mode, compression="infer", **kwargs).open()


def exists(url: str) -> bool:
    """Whether `url` exists; an I/O error is raised, never taken for "absent"."""
    return _exists(*filesystem(url))


def _exists(fs: fsspec.AbstractFileSystem, path: str) -> bool:
    # fsspec's own exists() answers False on any error: a transient one would read as "nothing
    # there" (then a resume would start afresh, a commit would nest one output in another).
    try:
        fs.info(path)
    except (FileNotFoundError, NotADirectoryError):  # NotADirectory: a parent is a file
        return False
    return True


def expand(pattern: str) -> list[str]:
    """Sorted URLs matching a glob pattern (a plain path matches itself if it exists)."""
    fs, path = filesystem(pattern)
    if any(c in path for c in "*?["):
        matches = fs.glob(path)
    else:
        matches = [path] if _exists(fs, path) else []
    protocol = pattern.split("://", 1)[0] + "://" if "://" in pattern else ""
    return sorted(protocol + m if protocol and not m.startswith(protocol) else m for m in matches)


def expand_files(url: str, directory_patterns: Sequence[str]) -> list[str]:
    """A directory's files matching any of `directory_patterns` (sorted), else what `url` names."""
    fs, path = filesystem(url)
    if fs.isdir(path):
        return sorted({f for pattern in directory_patterns for f in expand(join(url, pattern))})
    return expand(url)


def listing_digest(url: str) -> str:
    """sha256 of the names and sizes of the files at `url` (a file or a directory tree; "missing" if absent).

    Timestamps are left out: a file rewritten with the same bytes keeps its digest.
    """
    fs, path = filesystem(url)
    if not _exists(fs, path):
        return "missing"
    files = fs.find(path, detail=True, withdirs=False) if fs.isdir(path) else {path: fs.info(path)}
    entries = sorted((name[len(path):].lstrip("/"), info.get("size")) for name, info in files.items())
    return hashlib.sha256(json.dumps(entries).encode()).hexdigest()


def remove(url: str) -> None:
    """Delete a file or a directory tree if it exists."""
    fs, path = filesystem(url)
    if _exists(fs, path):
        fs.rm(path, recursive=True)


def is_local(url: str) -> bool:
    """Whether `url` is on a local (or mounted network) disk, where rename and flock work."""
    return isinstance(filesystem(url)[0], LocalFileSystem)


def write_atomic(url: str, data: bytes) -> None:
    """Replace the file at `url` with `data` in one step: a reader sees the old or the new bytes.

    Local disks: written to a temporary sibling, flushed, then renamed over the target. Object
    stores: one upload, which the store publishes whole.
    """
    fs, path = filesystem(url)
    if not is_local(url):
        fs.pipe(path, data)
        return
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    temp = f"{path}.tmp-{uuid.uuid4().hex[:8]}"
    try:
        with open(temp, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temp)
        raise


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
        logger.info("removed %d temporary folder(s) of interrupted runs: %s", len(removed), ", ".join(removed))
    return removed


def _exchange(a: str, b: str) -> bool:
    """Swap two local paths atomically (Linux renameat2 RENAME_EXCHANGE); False where unsupported."""
    rename = getattr(_LIBC, "renameat2", None) if _LIBC is not None else None
    if rename is None:
        return False
    at_fdcwd, rename_exchange = -100, 2
    return rename(at_fdcwd, os.fsencode(a), at_fdcwd, os.fsencode(b), rename_exchange) == 0


def _commit(fs: fsspec.AbstractFileSystem, temp: str, path: str, local: bool) -> None:
    """Publish the finished `temp` as `path`; a previous output is swapped out, then removed.

    Local disks: one atomic exchange (or, where the kernel lacks it, two renames: the old output
    moves to `<path>.old-<id>`, the new one in), so a reader sees the old or the new output, never a
    mix. Object stores have no rename: the old output is moved aside first, then the new one copied
    in, so no listing ever mixes them.
    """
    if local:
        if not os.path.exists(path):
            with contextlib.suppress(FileNotFoundError, OSError):
                os.rename(temp, path)
                return
        if _exchange(temp, path):
            shutil.rmtree(temp)
            return
        old = f"{path}.old-{uuid.uuid4().hex[:8]}"
        os.rename(path, old)
        os.rename(temp, path)
        shutil.rmtree(old)
        return
    if _exists(fs, path):
        old = f"{path}.old-{uuid.uuid4().hex[:8]}"
        _move_tree(fs, path, old)
        _move_tree(fs, temp, path)
        fs.rm(old, recursive=True)
    else:
        _move_tree(fs, temp, path)


def _move_tree(fs: fsspec.AbstractFileSystem, source: str, target: str) -> None:
    """Move every object under `source` to the same name under `target`, one object at a time.

    Object by object (`cp_file`), not `fs.mv(..., recursive=True)`: that guesses whether the target
    is an existing folder to move *into*, and a failed guess nests one output inside the other.
    """
    for name in fs.find(source):
        fs.cp_file(name, target + name[len(source):])
    fs.rm(source, recursive=True)


@contextlib.contextmanager
def atomic_output_dir(url: str, lock: bool = True) -> Iterator[str]:
    """Yield a temporary sibling directory; on success it replaces `url`, on failure it is removed.

    A failed stage therefore leaves nothing where a finished output would be. With `lock` (the
    default) the output's lock is held throughout (a second live writer fails at once, naming this
    one) and temporary folders of killed runs are removed first; pass `lock=False` only inside an
    output whose lock the caller holds (checkpoints and exports inside a training run).
    """
    from albert.locks import output_lock

    with output_lock(url) if lock else contextlib.nullcontext():
        fs, path = filesystem(url)
        path = path.rstrip("/")
        if lock:
            remove_leftovers(url)
        protocol = url.split("://", 1)[0] + "://" if "://" in url else ""
        temp_path = f"{path}.tmp-{uuid.uuid4().hex[:8]}"
        fs.makedirs(temp_path, exist_ok=True)
        try:
            yield protocol + temp_path
        except BaseException:
            if _exists(fs, temp_path):  # object stores have no empty directories
                fs.rm(temp_path, recursive=True)
            raise
        _commit(fs, temp_path, path, isinstance(fs, LocalFileSystem))
        logger.debug("committed %s", url)


def move_aside(url: str, label: str) -> str:
    """Rename the output `url` to a new sibling `<url>.<label>-<UTC time>` (never deleted); its new name."""
    fs, path = filesystem(url)
    protocol = url.split("://", 1)[0] + "://" if "://" in url else ""
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    target = f"{path.rstrip('/')}.{label}-{stamp}"
    suffix = 1
    while _exists(fs, target):
        suffix += 1
        target = f"{path.rstrip('/')}.{label}-{stamp}-{suffix}"
    if isinstance(fs, LocalFileSystem):
        os.rename(path, target)
    else:
        _move_tree(fs, path.rstrip("/"), target)
    return protocol + target
