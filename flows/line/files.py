"""A model line's files on any filesystem (local or an object store, through fsspec): their
sha256, a directory's listing, copies file by file."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import Any

from albert.fs import filesystem, join


def file_digest(url: str) -> str:
    """sha256 of the bytes of the file at `url`, read in 1 MiB blocks (compressed files as
    stored)."""
    fs, path = filesystem(url)
    digest = hashlib.sha256()
    with fs.open(path, "rb") as handle:
        while block := handle.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()


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
