"""The teacher-outputs cache: the teacher's outputs on the training examples, computed once,
written as NumPy shards and read back a batch at a time.

Layout: `CACHE/KEY/` holds `NAME-00000.npy` ... (`shard_size` examples each, one file per output:
`logits`, or `start_logits` and `end_logits` for SQuAD) and `manifest.json` (the key, the example
count, the shard size, the names). `KEY` is `cache_key`: a digest of the teacher's weights file
and of the encoded training inputs, so a changed teacher, a changed data file or other encoding
settings (sequence length, truncation, example limit) is a new directory, computed again; a
directory of another key is deleted when a new one is written. The directory appears whole or not
at all (`albert.outputs.atomic_output_dir`); the writer holds one shard in memory at a time.

`TeacherOutputs.rows(index)` reads the rows of a batch from memory-mapped shards: the pages a
batch touches are read, the whole cache never is. The cache is on a local disk (memory maps).
No pickle: `.npy` files are read with `allow_pickle=False`.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
from collections.abc import Iterable, Mapping

import numpy as np

from albert.errors import StageError
from albert.fs import join, open_file
from albert.outputs import atomic_output_dir

logger = logging.getLogger(__name__)

MANIFEST = "manifest.json"


def cache_key(teacher_digest: str, arrays: Mapping[str, np.ndarray]) -> str:
    """The cache's key: `teacher_digest` and every array of `arrays` (name, dtype, shape, bytes)."""
    digest = hashlib.sha256(teacher_digest.encode())
    for name in sorted(arrays):
        array = np.ascontiguousarray(arrays[name])
        digest.update(f"{name}:{array.dtype.str}:{array.shape}".encode())
        digest.update(array.tobytes())
    return digest.hexdigest()[:24]


def shard_name(name: str, shard: int) -> str:
    return f"{name}-{shard:05d}.npy"


def write_cache(
    root: str, key: str, count: int, shard_size: int, shards: Iterable[dict[str, np.ndarray]]
) -> str:
    """Write `shards` (each a `{name: rows}` of `shard_size` examples, the last one shorter;
    `count` in all) as `root/key`, deleting the other keys' directories in `root`; the path."""
    target = join(root, key)
    with atomic_output_dir(target, lock=False, keep_previous=False) as temp:
        total, names = 0, None
        for index, shard in enumerate(shards):
            names = sorted(shard)
            for name in names:
                with open_file(join(temp, shard_name(name, index)), "wb") as handle:
                    np.save(handle, np.ascontiguousarray(shard[name]), allow_pickle=False)
            total += len(shard[names[0]])
        if total != count:
            raise StageError(f"{target}: {total} teacher outputs written, {count} expected")
        manifest = {"key": key, "count": count, "shard_size": shard_size, "names": names}
        with open_file(join(temp, MANIFEST), "w") as handle:
            json.dump(manifest, handle, indent=1)
    for entry in os.listdir(root):
        if entry != key and os.path.exists(join(root, entry, MANIFEST)):
            shutil.rmtree(join(root, entry))
    return target


def find_cache(root: str, key: str) -> str | None:
    """`root/key` when a complete cache of `key` is there, else None: its manifest names `key` and
    every shard it lists is whole (`shard_damage`; a damaged one is named in a warning, and the
    cache is written again)."""
    path = join(root, key)
    try:
        with open(join(path, MANIFEST)) as handle:
            manifest = json.load(handle)
        if manifest.get("key") != key:
            return None
        count, size = manifest["count"], manifest["shard_size"]
        for name in manifest["names"]:
            for shard, start in enumerate(range(0, count, size)):
                file = join(path, shard_name(name, shard))
                damage = shard_damage(file, min(size, count - start))
                if damage:
                    logger.warning("%s: a damaged teacher-outputs shard (%s)", file, damage)
                    return None
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return path


def shard_damage(file: str, rows: int) -> str | None:
    """Why the `.npy` shard `file` is not `rows` whole rows (a header that is not NumPy's, another
    row count, fewer bytes than its header's shape needs), or None. Reads the header only."""
    with open(file, "rb") as handle:
        try:
            version = np.lib.format.read_magic(handle)
            header = (
                np.lib.format.read_array_header_1_0
                if version == (1, 0)
                else np.lib.format.read_array_header_2_0
            )
            shape, _, dtype = header(handle)
        except ValueError as error:
            return f"not a NumPy array: {error}"
        data = handle.tell()
    if not shape or shape[0] != rows:
        return f"{shape[0] if shape else 0} rows, the manifest says {rows}"
    needed = data + int(np.prod(shape)) * dtype.itemsize
    size = os.path.getsize(file)
    return f"{size} bytes, {needed} expected" if size != needed else None


class TeacherOutputs:
    """The cache at `path` (`write_cache`'s), read a batch of rows at a time (module docstring)."""

    def __init__(self, path: str):
        self.path = path
        with open(join(path, MANIFEST)) as handle:
            manifest = json.load(handle)
        self.count, self.shard_size = manifest["count"], manifest["shard_size"]
        self.names: list[str] = manifest["names"]
        self._maps: dict[tuple[str, int], np.ndarray] = {}
        first = {name: self._shard(name, 0) for name in self.names}
        self.shapes = {name: first[name].shape[1:] for name in self.names}
        self.dtypes = {name: first[name].dtype for name in self.names}

    def _shard(self, name: str, shard: int) -> np.ndarray:
        if (name, shard) not in self._maps:
            file = join(self.path, shard_name(name, shard))
            self._maps[(name, shard)] = np.load(file, mmap_mode="r", allow_pickle=False)
        return self._maps[(name, shard)]

    def rows(self, index) -> dict[str, np.ndarray]:
        """`{name: the rows of examples `index`}`, in `index`'s order (copied out of the maps)."""
        index = np.asarray(index, dtype=np.int64).reshape(-1)
        shards, offsets = np.divmod(index, self.shard_size)
        result = {}
        for name in self.names:
            out = np.empty((len(index), *self.shapes[name]), self.dtypes[name])
            for shard in np.unique(shards):
                where = shards == shard
                out[where] = self._shard(name, int(shard))[offsets[where]]
            result[name] = out
        return result
