"""Cross-run cache keys for the flows' stage tasks: input manifest + stage parameters + code
version.

A stage is skipped when the files it reads, its typed config and the source code of the modules it
runs (its module and everything it imports from our packages, lazily imported modules included)
are all unchanged. A downstream stage's inputs are the upstream stage's output directory, so
changing one parameter re-runs that stage and exactly the stages after it. Each finished output
records the key that produced it (`.stage-key`), so a cached result is only used while the output
on disk is still the one that result describes.
"""

from __future__ import annotations

import ast
import contextlib
import functools
import hashlib
import importlib.util
import json
import logging
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from prefect.cache_policies import CachePolicy
from prefect.context import TaskRunContext

from albert.config import StageConfig
from albert.fs import exists, expand, filesystem, join, open_file
from albert.outputs import CONTENT_KEYS, write_atomic

logger = logging.getLogger(__name__)

SMALL_FILE_BYTES = 1 << 20
"""Local files up to this size are identified by their content hash, larger ones by size + mtime."""

STAGE_KEY_FILE = ".stage-key"
_NOT_DATA = frozenset({STAGE_KEY_FILE})
"""Files in an output that are bookkeeping, not data: left out of the manifests."""


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _local_entries(root: Path) -> Iterable[tuple[str, Any]]:
    """(relative name, identity) of every file under `root` (or of `root` itself when a file)."""
    files = [root] if root.is_file() else sorted(p for p in root.rglob("*") if p.is_file())
    for path in files:
        name = "." if path == root else path.relative_to(root).as_posix()
        # unfinished outputs, bookkeeping
        if ".tmp-" in name or name.rsplit("/", 1)[-1] in _NOT_DATA:
            continue
        stat = path.stat()
        if stat.st_size <= SMALL_FILE_BYTES:
            yield name, [stat.st_size, _sha256(path.read_bytes())]
        else:
            yield name, [stat.st_size, stat.st_mtime_ns]


def _remote_entries(url: str) -> Iterable[tuple[str, Any]]:
    """(relative name, identity) from object metadata: the store's content hash where it has one."""
    fs, path = filesystem(url)
    details = fs.find(path, detail=True, withdirs=False)
    for name, info in sorted(details.items()):
        relative = name[len(path) :].lstrip("/") or "."
        if ".tmp-" in relative or relative.rsplit("/", 1)[-1] in _NOT_DATA:
            continue
        content = next((str(info[k]) for k in CONTENT_KEYS if info.get(k)), None)
        yield relative, [info.get("size"), content or str(info.get("mtime") or info.get("updated"))]


def manifest(url: str) -> dict[str, Any]:
    """Names and identities (size + content hash or mtime) of the files at `url` (file, dir or
    glob)."""
    matches = expand(url) if any(c in url for c in "*?[") else [url]
    entries: dict[str, Any] = {}
    for match in matches:
        if "://" in match and not match.startswith("file://"):
            entries[match] = dict(_remote_entries(match)) if exists(match) else None
        else:
            path = Path(match.removeprefix("file://"))
            entries[match] = dict(_local_entries(path)) if path.exists() else None
    return entries


def manifest_digest(urls: Iterable[str]) -> str:
    """One hex digest of the manifests of `urls` (missing paths count as missing, not as errors)."""
    return _sha256(json.dumps([manifest(u) for u in urls], sort_keys=True).encode())


OUR_PACKAGES = ("albert", "pipelines", "model", "flows")
"""The packages whose modules count towards a stage's code version."""


def _module_file(name: str) -> Path | None:
    """The source file of module `name` in our packages (None for other modules), found without
    importing it."""
    top, *rest = name.split(".")
    if top not in OUR_PACKAGES:
        return None
    spec = importlib.util.find_spec(top)
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(next(iter(spec.submodule_search_locations))).joinpath(*rest)
    for candidate in (path / "__init__.py", path.with_suffix(".py")):
        if candidate.is_file():
            return candidate
    return None


# CPython before 3.11.8 keeps the AST constructor's recursion depth in one state per interpreter:
# another thread building an AST meanwhile (Prefect's threads, a library's `inspect`/`ast` use) can
# make a parse fail with "AST constructor recursion depth mismatch" (python/cpython#106905). Ours
# parse one at a time, and a parse that met another thread's is repeated.
_PARSE_LOCK = threading.Lock()
_PARSE_ATTEMPTS = 5


def parse_module(path: Path) -> ast.Module:
    """`path`'s AST (see _PARSE_LOCK for why a SystemError is retried)."""
    source = path.read_bytes()
    for _ in range(_PARSE_ATTEMPTS - 1):
        with contextlib.suppress(SystemError), _PARSE_LOCK:
            return ast.parse(source, filename=str(path))
    with _PARSE_LOCK:
        return ast.parse(source, filename=str(path))


def _imported_names(path: Path, module: str) -> frozenset[str]:
    """Every module name `path` imports, at the top or inside functions (`from a import b` gives
    a and a.b); parsed once per version of the file (its size and modification time)."""
    stat = path.stat()
    return _parsed_imports(path, module, stat.st_mtime_ns, stat.st_size)


@functools.lru_cache(maxsize=4096)
def _parsed_imports(path: Path, module: str, mtime_ns: int, size: int) -> frozenset[str]:
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    names: set[str] = set()
    for node in ast.walk(parse_module(path)):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(parent + ([base] if base else []))
            names.add(base)
            names.update(f"{base}.{alias.name}" for alias in node.names)
    return frozenset(names)


def module_closure(modules: Iterable[str]) -> dict[str, Path]:
    """`modules` and every module of our packages they import, transitively (parent packages
    too)."""
    found: dict[str, Path] = {}
    pending = list(modules)
    while pending:
        name = pending.pop()
        parts = name.split(".")
        # importing a.b.c runs a/__init__ and a/b/__init__ too
        for depth in range(1, len(parts) + 1):
            prefix = ".".join(parts[:depth])
            path = _module_file(prefix)
            if path is None or prefix in found:
                continue
            found[prefix] = path
            pending.extend(_imported_names(path, prefix))
    return dict(sorted(found.items()))


def code_version(modules: Iterable[str]) -> str:
    """Hash of the sources a stage runs: `modules` and what they import from our packages.

    Editing a stage's code invalidates its cache; editing a module it never imports (say
    model/finetune.py for pretraining) does not.
    """
    digest = hashlib.sha256()
    for name, path in module_closure(modules).items():
        digest.update(f"{name}\0".encode())
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
    stage: str, config: StageConfig, input_fields: Iterable[str], modules: Iterable[str]
) -> str:
    """The cache key of one stage run: sha256 of stage name, config JSON, input manifest, code."""
    parts = {
        "stage": stage,
        "config": config.model_dump(mode="json"),
        "inputs": manifest_digest(input_urls(config, input_fields)),
        "code": code_version(modules),
    }
    key = _sha256(json.dumps(parts, sort_keys=True).encode())
    logger.debug("cache key of %s: %s (%s)", stage, key, parts)
    return f"{stage}-{key}"


@dataclass
class StageCachePolicy(CachePolicy):
    """Prefect cache policy of a stage task whose `config` parameter is its typed stage config.

    `input_fields` name the config fields that point at the stage's input files; `modules` are the
    modules the stage runs (their imports within our packages join the code version). Other task
    parameters (Beam runner flags, callbacks) do not change the stage's output and are not part of
    the key. `output_marker` is the file (relative to the output) that the stage's finished output
    always contains: a cached result counts only while it is there (`flows.engine.tasks.run_stage`).
    """

    input_fields: tuple[str, ...] = ()
    modules: tuple[str, ...] = ()
    output_marker: str = ""
    config_parameter: str = "config"

    def compute_key(
        self,
        task_ctx: TaskRunContext,
        inputs: dict[str, Any],
        flow_parameters: dict[str, Any],
        **kwargs: Any,
    ) -> str | None:
        config = inputs[self.config_parameter]
        return stage_cache_key(task_ctx.task.name, config, self.input_fields, self.modules)


def output_key(output: str) -> str | None:
    """The cache key recorded in a finished output (None: none recorded)."""
    marker = join(output, STAGE_KEY_FILE)
    if not exists(marker):
        return None
    with open_file(marker, "r") as handle:
        return handle.read().strip() or None


def mark_output(output: str, key: str) -> None:
    """Record in `output` that it is the output of the stage run `key` (written after it
    finished)."""
    write_atomic(join(output, STAGE_KEY_FILE), (key + "\n").encode())
