"""File access for local paths and URLs (gs://, memory://) through fsspec, and atomic outputs."""

from __future__ import annotations

import contextlib
import logging
import posixpath
import uuid
from collections.abc import Iterator, Sequence
from typing import IO

import fsspec

logger = logging.getLogger(__name__)


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
    fs, path = filesystem(url)
    return fs.exists(path)


def expand(pattern: str) -> list[str]:
    """Sorted URLs matching a glob pattern (a plain path matches itself if it exists)."""
    fs, path = filesystem(pattern)
    if any(c in path for c in "*?["):
        matches = fs.glob(path)
    else:
        matches = [path] if fs.exists(path) else []
    protocol = pattern.split("://", 1)[0] + "://" if "://" in pattern else ""
    return sorted(protocol + m if protocol and not m.startswith(protocol) else m for m in matches)


def expand_files(url: str, directory_patterns: Sequence[str]) -> list[str]:
    """A directory's files matching any of `directory_patterns` (sorted), else what `url` names."""
    fs, path = filesystem(url)
    if fs.isdir(path):
        return sorted({f for pattern in directory_patterns for f in expand(join(url, pattern))})
    return expand(url)


def remove(url: str) -> None:
    """Delete a file or a directory tree if it exists."""
    fs, path = filesystem(url)
    if fs.exists(path):
        fs.rm(path, recursive=True)


@contextlib.contextmanager
def atomic_output_dir(url: str) -> Iterator[str]:
    """Yield a temporary sibling directory; on success it replaces `url`, on failure it is removed.

    A failed stage therefore leaves nothing where a finished output would be.
    """
    fs, path = filesystem(url)
    protocol = url.split("://", 1)[0] + "://" if "://" in url else ""
    temp_path = f"{path.rstrip('/')}.tmp-{uuid.uuid4().hex[:8]}"
    fs.makedirs(temp_path, exist_ok=True)
    try:
        yield protocol + temp_path
    except BaseException:
        if fs.exists(temp_path):  # object stores have no empty directories
            fs.rm(temp_path, recursive=True)
        raise
    if fs.exists(path):
        fs.rm(path, recursive=True)
    fs.mv(temp_path, path, recursive=True)
    logger.debug("committed %s", url)
