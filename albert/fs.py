"""Files at local paths and URLs (gs://, memory://) through fsspec: find, open, list, create.

The second link of the `albert/` chain (errors <- fs <- locks <- outputs). An I/O error is raised,
never taken for "absent"."""

from __future__ import annotations

import hashlib
import json
import posixpath
from collections.abc import Sequence
from typing import IO

import fsspec
from fsspec.implementations.local import LocalFileSystem


def filesystem(url: str) -> tuple[fsspec.AbstractFileSystem, str]:
    """The fsspec filesystem serving `url` and the path within it."""
    return fsspec.core.url_to_fs(url)


def join(base: str, *parts: str) -> str:
    """Join path parts with '/' whatever the scheme (os.path.join would break gs:// on Windows)."""
    return posixpath.join(base.rstrip("/") if base != "/" else base, *parts)


def open_file(url: str, mode: str = "rb", **kwargs) -> IO:
    """Open a local path or URL; compression is inferred from the name ('.bz2', '.gz')."""
    return fsspec.open(url, mode, compression="infer", **kwargs).open()


def is_compressed(url: str) -> bool:
    """Whether `open_file` decompresses `url` (its name says '.bz2', '.gz', ...): such a file
    reads only from its start (a seek reads every byte before the offset)."""
    return fsspec.utils.infer_compression(url) is not None


def exists(url: str) -> bool:
    """Whether `url` exists; an I/O error is raised, never taken for "absent"."""
    return exists_in(*filesystem(url))


def exists_in(fs: fsspec.AbstractFileSystem, path: str) -> bool:
    """Whether `path` exists on `fs` (what `exists` asks of a URL's filesystem)."""
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
        matches = [path] if exists_in(fs, path) else []
    protocol = pattern.split("://", 1)[0] + "://" if "://" in pattern else ""
    return sorted(protocol + m if protocol and not m.startswith(protocol) else m for m in matches)


def expand_files(url: str, directory_patterns: Sequence[str]) -> list[str]:
    """A directory's files matching any of `directory_patterns` (sorted), else what `url` names."""
    fs, path = filesystem(url)
    if fs.isdir(path):
        return sorted({f for pattern in directory_patterns for f in expand(join(url, pattern))})
    return expand(url)


def file_digest(url: str, limit: int | None = None) -> str:
    """sha256 of the bytes of the file at `url`, read in 1 MiB blocks (compressed files as
    stored); with `limit`, of its first `limit` + 1 bytes at most (a file longer than it has
    another digest whatever it holds)."""
    fs, path = filesystem(url)
    digest = hashlib.sha256()
    left = -1 if limit is None else limit + 1
    with fs.open(path, "rb") as handle:
        while left and (block := handle.read(1 << 20 if left < 0 else min(left, 1 << 20))):
            digest.update(block)
            left = left - len(block) if left > 0 else left
    return digest.hexdigest()


def listing_digest(url: str) -> str:
    """sha256 of the names and sizes of the files at `url` (a file or a directory tree; "missing"
    if absent).

    Timestamps are left out: a file rewritten with the same bytes keeps its digest.
    """
    fs, path = filesystem(url)
    if not exists_in(fs, path):
        return "missing"
    files = fs.find(path, detail=True, withdirs=False) if fs.isdir(path) else {path: fs.info(path)}
    entries = sorted(
        (name[len(path) :].lstrip("/"), info.get("size")) for name, info in files.items()
    )
    return hashlib.sha256(json.dumps(entries).encode()).hexdigest()


def remove(url: str) -> None:
    """Delete a file or a directory tree if it exists."""
    fs, path = filesystem(url)
    if exists_in(fs, path):
        fs.rm(path, recursive=True)


def is_local(url: str) -> bool:
    """Whether `url` is on a local (or mounted network) disk, where rename and flock work."""
    return isinstance(filesystem(url)[0], LocalFileSystem)


def makedirs(url: str) -> None:
    """Create the directory `url` and its parents if they do not exist (object stores: a no-op)."""
    fs, path = filesystem(url)
    fs.makedirs(path, exist_ok=True)
