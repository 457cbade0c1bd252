"""A model line's files on any filesystem (local or an object store, through fsspec): their
sha256, a directory's listing, copies file by file."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from fsspec.implementations.local import LocalFileSystem

from albert.errors import StageError
from albert.fs import file_digest, filesystem, join


def irregular(url: str) -> str | None:
    """Why the file at `url` may not be opened: not a regular file (a FIFO, a device, a socket, a
    directory: reading one may never end); None for a regular file or none at all."""
    fs, path = filesystem(url)
    try:
        info = fs.info(path)
    except (FileNotFoundError, NotADirectoryError):
        return None
    if info.get("type") == "file":
        return None
    kind = "a directory" if info.get("type") == "directory" else "a FIFO, device or socket"
    link = f", a symlink to {info['destination']}" if info.get("islink") else ""
    return f"not a regular file ({kind}{link})"


def require_regular(url: str) -> None:
    """StageError `URL: not a regular file (...)` unless `url` is a regular file or absent."""
    reason = irregular(url)
    if reason is not None:
        raise StageError(f"{url}: {reason}")


def outside_link(url: str, root: str) -> str | None:
    """Where `url` leads when a symlink on its way takes it out of the directory `root` (local
    paths only: object stores have no symlinks); None when it stays inside."""
    fs, path = filesystem(url)
    if not isinstance(fs, LocalFileSystem) or not os.path.lexists(path):
        return None
    real, top = os.path.realpath(path), os.path.realpath(filesystem(root)[1])
    return None if real == top or real.startswith(top.rstrip(os.sep) + os.sep) else real


def tree_files(directory: str) -> list[tuple[str, str]]:
    """(name relative to `directory`, URL) of every file under `directory`, sorted."""
    fs, path = filesystem(directory)
    protocol = directory.split("://", 1)[0] + "://" if "://" in directory else ""
    return [
        (name[len(path.rstrip("/")) :].lstrip("/"), protocol + name)
        for name in sorted(fs.find(path, withdirs=False))
    ]


def file_listing(directory: str) -> dict[str, dict[str, Any]]:
    """Relative name -> {sha256, bytes} of every file under `directory`."""
    return {
        relative: {"sha256": file_digest(url), "bytes": file_size(url)}
        for relative, url in tree_files(directory)
    }


def copy_tree(source: str, target: str, skip: Callable[[str], bool] = lambda name: False) -> None:
    """Copy the file or directory `source` to `target` file by file (any two filesystems),
    leaving out the files whose relative name `skip` accepts."""
    fs, path = filesystem(source)
    if not fs.isdir(path):
        _copy_file(source, target)
        return
    for relative, url in tree_files(source):
        if not skip(relative):
            _copy_file(url, join(target, relative))


def file_size(url: str) -> int:
    """The size in bytes of the file at `url`."""
    fs, path = filesystem(url)
    return int(fs.info(path).get("size") or 0)


def _copy_file(source: str, target: str) -> None:
    fs, path = filesystem(target)
    parent = path.rsplit("/", 1)[0]
    if parent:
        fs.makedirs(parent, exist_ok=True)
    source_fs, source_path = filesystem(source)
    with source_fs.open(source_path, "rb") as reader, fs.open(path, "wb") as writer:
        while block := reader.read(1 << 20):
            writer.write(block)
