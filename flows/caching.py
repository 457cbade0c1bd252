"""Cross-run cache keys for the flows' stage tasks: input manifest + stage parameters + code version.

A stage is skipped when the files it reads, its typed config and the source code of the packages
that implement it are all unchanged. A downstream stage's inputs are the upstream stage's output
directory, so changing one parameter re-runs that stage and exactly the stages after it.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import logging
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from prefect.cache_policies import CachePolicy
from prefect.context import TaskRunContext

from albert import fileio
from albert.config import StageConfig

logger = logging.getLogger(__name__)

SMALL_FILE_BYTES = 1 << 20
"""Local files up to this size are identified by their content hash, larger ones by size + mtime."""

_CONTENT_KEYS = ("md5Hash", "crc32c", "md5", "ETag", "etag")


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _local_entries(root: Path) -> Iterable[tuple[str, Any]]:
    """(relative name, identity) of every file under `root` (or of `root` itself when a file)."""
    files = [root] if root.is_file() else sorted(p for p in root.rglob("*") if p.is_file())
    for path in files:
        name = "." if path == root else path.relative_to(root).as_posix()
        if ".tmp-" in name:  # an unfinished atomic output is not part of the data
            continue
        stat = path.stat()
        if stat.st_size <= SMALL_FILE_BYTES:
            yield name, [stat.st_size, _sha256(path.read_bytes())]
        else:
            yield name, [stat.st_size, stat.st_mtime_ns]


def _remote_entries(url: str) -> Iterable[tuple[str, Any]]:
    """(relative name, identity) from object metadata: the store's content hash where it has one."""
    fs, path = fileio.filesystem(url)
    details = fs.find(path, detail=True, withdirs=False)
    for name, info in sorted(details.items()):
        relative = name[len(path):].lstrip("/") or "."
        content = next((str(info[k]) for k in _CONTENT_KEYS if info.get(k)), None)
        yield relative, [info.get("size"), content or str(info.get("mtime") or info.get("updated"))]


def manifest(url: str) -> dict[str, Any]:
    """Names and identities (size + content hash or mtime) of the files at `url` (file, dir or glob)."""
    matches = fileio.expand(url) if any(c in url for c in "*?[") else [url]
    entries: dict[str, Any] = {}
    for match in matches:
        if "://" in match and not match.startswith("file://"):
            entries[match] = dict(_remote_entries(match)) if fileio.exists(match) else None
        else:
            path = Path(match.removeprefix("file://"))
            entries[match] = dict(_local_entries(path)) if path.exists() else None
    return entries


def manifest_digest(urls: Iterable[str]) -> str:
    """One hex digest of the manifests of `urls` (missing paths count as missing, not as errors)."""
    return _sha256(json.dumps([manifest(u) for u in urls], sort_keys=True).encode())


def _package_dir(name: str) -> Path:
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        raise ValueError(f"{name!r} is not an importable package")
    return Path(next(iter(spec.submodule_search_locations)))


def code_version(packages: Iterable[str]) -> str:
    """Hash of the Python sources of `packages`: editing a stage's code invalidates its cache."""
    digest = hashlib.sha256()
    for package in sorted(set(packages)):
        root = _package_dir(package)
        for path in sorted(root.rglob("*.py")):
            digest.update(f"{package}/{path.relative_to(root).as_posix()}\0".encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()


def input_urls(config: StageConfig, input_fields: Iterable[str]) -> list[str]:
    """The paths named by `config`'s input fields (list fields expand; unset optional ones drop)."""
    urls: list[str] = []
    for name in input_fields:
        value = getattr(config, name)
        if value is None:
            continue
        urls.extend(value if isinstance(value, (list, tuple)) else [value])
    return [str(u) for u in urls]


def stage_cache_key(
    stage: str, config: StageConfig, input_fields: Iterable[str], packages: Iterable[str]
) -> str:
    """The cache key of one stage run: sha256 of stage name, config JSON, input manifest, code."""
    parts = {
        "stage": stage,
        "config": config.model_dump(mode="json"),
        "inputs": manifest_digest(input_urls(config, input_fields)),
        "code": code_version(packages),
    }
    key = _sha256(json.dumps(parts, sort_keys=True).encode())
    logger.debug("cache key of %s: %s (%s)", stage, key, parts)
    return f"{stage}-{key}"


@dataclass
class StageCachePolicy(CachePolicy):
    """Prefect cache policy of a stage task whose `config` parameter is its typed stage config.

    `input_fields` name the config fields that point at the stage's input files; `packages` are the
    packages whose source is the stage's code version. Other task parameters (Beam runner flags,
    callbacks) do not change the stage's output and are not part of the key.
    """

    input_fields: tuple[str, ...] = ()
    packages: tuple[str, ...] = ("albert",)
    config_parameter: str = "config"

    def compute_key(
        self,
        task_ctx: TaskRunContext,
        inputs: dict[str, Any],
        flow_parameters: dict[str, Any],
        **kwargs: Any,
    ) -> str | None:
        config = inputs[self.config_parameter]
        return stage_cache_key(task_ctx.task.name, config, self.input_fields, self.packages)


STAGE_KEY_FILE = ".stage-key"


def claim_output(output: str, key: str) -> None:
    """Mark `output` as the output of the stage run `key`, clearing a stale one first.

    For stages that write in place and resume (pretraining): an output left by an interrupted run
    with the same key is kept so the retry resumes; one written under another key (other data or
    parameters) is removed so the stage starts fresh instead of resuming someone else's run.
    """
    marker = fileio.join(output, STAGE_KEY_FILE)
    if fileio.exists(marker):
        with fileio.open_file(marker, "r") as handle:
            if handle.read().strip() == key:
                return
        logger.info("%s holds the output of other inputs or parameters: starting it afresh", output)
        fileio.remove(output)
    fs, path = fileio.filesystem(output)
    fs.makedirs(path, exist_ok=True)
    with fileio.open_file(marker, "w") as handle:
        handle.write(key + "\n")
