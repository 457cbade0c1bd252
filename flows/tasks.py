"""Thin Prefect tasks around the stages' `run` functions: cross-run caching, retries, persisted results.

Every task takes the stage's typed config as `config`; its cache key is the manifest of the files the
config's input fields name + the config + the source of the modules the stage runs (flows.caching). Tasks
retry transient failures (I/O, connection, preemption) with exponential backoff and never retry bad
input or configuration. The stage modules are imported when a task runs, so that importing the flows
does not load TensorFlow or Beam.

Results are persisted as plain JSON only (`PlainJsonSerializer`). A run directory may sit on a
shared bucket, so a stored record is never handed to Prefect as found: the storage that Prefect
reads records through parses it strictly (`check_result_record`: exact keys, no duplicates, our
serializer, a JSON object as the value) and gives Prefect a record rebuilt from the parsed plain
values, so whatever else the file holds (another serializer, a pickle, an old record format) never
reaches a deserializer that can build objects. A record that fails the check is refused with a
StageError, before the task runs (`refuse_unsafe_record`) and in that storage.
"""

from __future__ import annotations

import hashlib
import importlib
import json
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from prefect import task
from prefect.client.schemas.objects import TaskRun
from prefect.filesystems import LocalFileSystem, RemoteFileSystem
from prefect.results import ResultRecord
from prefect.serializers import Serializer
from prefect.states import State
from prefect.tasks import Task, exponential_backoff
from pydantic import Field

from albert.config import ConfigError, StageConfig
from albert.fileio import (
    atomic_output_dir,
    exists,
    join,
    move_aside,
    moved_aside_copies,
    open_file,
    remove,
)
from albert.locks import output_lock
from albert.stage import StageError
from flows.caching import StageCachePolicy, mark_output, output_key, stage_cache_key

RETRIES = 2
RETRY_BACKOFF_SECONDS = 2.0

_PERMANENT_OS_ERRORS = (
    FileNotFoundError,
    FileExistsError,
    PermissionError,
    IsADirectoryError,
    NotADirectoryError,
)
_TRANSIENT_ERROR_NAMES = frozenset(
    {
        # Google Cloud client libraries (GCS, Dataflow): the service is briefly unavailable.
        "google.api_core.exceptions.ServiceUnavailable",
        "google.api_core.exceptions.TooManyRequests",
        "google.api_core.exceptions.InternalServerError",
        "google.api_core.exceptions.DeadlineExceeded",
        # TensorFlow: a worker or TPU was preempted / a collective was aborted.
        "tensorflow.python.framework.errors_impl.UnavailableError",
        "tensorflow.python.framework.errors_impl.AbortedError",
        "tensorflow.python.framework.errors_impl.DeadlineExceededError",
    }
)


def is_transient_error(error: BaseException) -> bool:
    """Whether retrying may help: I/O and connection errors, timeouts, preemption; not bad input."""
    if isinstance(error, (StageError, ConfigError, _PERMANENT_OS_ERRORS)):
        return False
    if isinstance(error, OSError):  # includes ConnectionError, TimeoutError, BrokenPipeError, EIO
        return True
    names = {f"{cls.__module__}.{cls.__qualname__}" for cls in type(error).__mro__}
    return not names.isdisjoint(_TRANSIENT_ERROR_NAMES)


def retry_if_transient(task: Task[..., Any], task_run: TaskRun, state: State) -> bool:
    """Prefect `retry_condition_fn`: retry a failed stage only when its error is transient."""
    try:
        state.result(raise_on_failure=True)
    except BaseException as error:  # noqa: BLE001  (we classify, never swallow: the state stays failed)
        return is_transient_error(error)
    return False


class PlainJsonSerializer(Serializer):
    """Task results as plain JSON: no pickle and, unlike Prefect's "json", no class looked up by name."""

    type: Literal["albert-json"] = "albert-json"

    def dumps(self, obj: Any) -> bytes:
        return json.dumps(obj, sort_keys=True, default=str).encode()

    def loads(self, blob: bytes) -> Any:
        return json.loads(blob)


class UnsafeResultError(StageError):
    """A stored task result is not a plain-JSON record of ours; it is refused, never loaded."""


_OUR_SERIALIZER = {"type": PlainJsonSerializer.model_fields["type"].default}
_RECORD_KEYS = ("metadata", "result")
_METADATA_KEYS = ("storage_key", "expiration", "serializer", "prefect_version", "storage_block_id")
"""The record layout Prefect 3.8 writes (`ResultRecord.serialize`), the only one we read back."""


class _NotOurRecord(Exception):
    """Why a stored record is not one that `PlainJsonSerializer` wrote."""


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """json `object_pairs_hook`: an object naming a key twice is not ours (readers disagree)."""
    keys = [key for key, _ in pairs]
    if len(set(keys)) != len(keys):
        raise ValueError(f"duplicate key {next(k for k in keys if keys.count(k) > 1)!r}")
    return dict(pairs)


def _strict_json(text: str | bytes) -> Any:
    """Plain values (dict, list, str, number, bool, None) from JSON text; else ValueError."""
    try:
        return json.loads(text, object_pairs_hook=_unique_keys)
    except RecursionError as error:
        raise ValueError("nested too deeply") from error


def _rebuilt_record(content: bytes) -> bytes:
    """The record `content` rebuilt from its parsed plain values; else _NotOurRecord saying why."""
    try:
        record = _strict_json(content)
    except ValueError:
        record = None
    if not isinstance(record, dict):
        raise _NotOurRecord("uses serializer 'none: not a JSON result record', not plain JSON")
    metadata = record.get("metadata")
    metadata = metadata if isinstance(metadata, dict) else {}
    for serializer in (record.get("serializer", _OUR_SERIALIZER), metadata.get("serializer")):
        if serializer != _OUR_SERIALIZER:  # the first one: where old records kept it
            kind = serializer.get("type") if isinstance(serializer, dict) else serializer
            named = serializer if kind == _OUR_SERIALIZER["type"] else kind
            raise _NotOurRecord(f"uses serializer {_short(named)}, not plain JSON")
    for keys, expected in ((record, _RECORD_KEYS), (metadata, _METADATA_KEYS)):
        if unexpected := sorted(set(keys) - set(expected)):
            raise _NotOurRecord(f"has an unexpected key {_short(unexpected[0])}")
        if missing := [key for key in expected if key not in keys]:
            raise _NotOurRecord(f"lacks the key {missing[0]!r}")
    storage_key, block_id = metadata["storage_key"], metadata["storage_block_id"]
    if not (isinstance(storage_key, str | None) and isinstance(metadata["prefect_version"], str)
            and metadata["expiration"] is None and (block_id is None or _is_uuid(block_id))):
        raise _NotOurRecord("has metadata values of the wrong type")
    result = record["result"]
    try:
        result = _strict_json(result) if isinstance(result, str) else None
    except ValueError as error:
        raise _NotOurRecord(f"holds a value that is not plain JSON ({error})") from None
    if not isinstance(result, dict):
        raise _NotOurRecord("holds a value that is not a JSON object")
    rebuilt = {"metadata": {key: metadata[key] for key in _METADATA_KEYS},
               "result": PlainJsonSerializer().dumps(result).decode()}
    return json.dumps(rebuilt, ensure_ascii=False, separators=(",", ":")).encode()


def _short(value: Any) -> str:
    """repr(value), cut to 60 characters: a refusal names what it found in one readable line."""
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _is_uuid(value: Any) -> bool:
    try:
        return isinstance(value, str) and str(uuid.UUID(value)) == value
    except ValueError:
        return False


def check_result_record(content: bytes, where: str) -> bytes:
    """The Prefect result record `content` rebuilt from its plain values, if it is one that
    `PlainJsonSerializer` wrote (strict: the exact keys and types of `_METADATA_KEYS`, no duplicate
    keys, a JSON object as the value); else raise a one-line UnsafeResultError naming `where`.

    Only the rebuilt bytes reach Prefect, so no reader sees a key, a serializer or a payload that
    the check did not pass, whatever its parsing rules; nothing is parsed here but plain JSON.
    """
    try:
        return _rebuilt_record(content)
    except _NotOurRecord as error:
        raise UnsafeResultError(
            f"{where}: stored task result {error}; refused without loading it (it could run code)"
            " - delete the file to re-run the stage"
        ) from None


class _JsonOnlyReads:
    """Storage-block mixin: Prefect reads every record as `check_result_record` rebuilt it.

    Prefect calls `read_path(key, _sync=True)` from sync code and `aread_path(key)` from async code
    (prefect._internal.compatibility.blocks), so plain methods suffice: `read_path` always reads
    synchronously and needs none of prefect._internal's async_dispatch.
    """

    basepath: str

    def _record_path(self, path: str) -> str:
        return join(str(self.basepath), path)

    async def aread_path(self, path: str) -> bytes:
        content = await super().aread_path(path)  # type: ignore[misc]
        return check_result_record(content, self._record_path(path))

    def read_path(self, path: str, _sync: bool = True) -> bytes:
        content = super().read_path(path, _sync=True)  # type: ignore[misc]
        return check_result_record(content, self._record_path(path))


class JsonOnlyLocalFileSystem(_JsonOnlyReads, LocalFileSystem):
    """Local result storage that reads plain-JSON result records only."""

    _block_type_name = "Albert JSON-only Local File System"
    _block_type_slug = "albert-json-only-local-file-system"


class JsonOnlyRemoteFileSystem(_JsonOnlyReads, RemoteFileSystem):
    """Remote (gs://, s3://, ...) result storage that reads plain-JSON result records only."""

    _block_type_name = "Albert JSON-only Remote File System"
    _block_type_slug = "albert-json-only-remote-file-system"


def stage_task(
    name: str, input_fields: Sequence[str], modules: Sequence[str]
) -> Callable[[Callable[..., Any]], Task[..., Any]]:
    """Decorator: a stage task cached on (inputs, config, code of `modules`) that retries transient
    failures, its result persisted as plain JSON."""
    return task(
        name=name,
        task_run_name=f"{name}",
        cache_policy=StageCachePolicy(input_fields=tuple(input_fields), modules=tuple(modules)),
        persist_result=True,
        result_serializer=PlainJsonSerializer(),
        retries=RETRIES,
        retry_delay_seconds=exponential_backoff(RETRY_BACKOFF_SECONDS),
        retry_condition_fn=retry_if_transient,
    )


def _stage(module: str) -> Any:
    return importlib.import_module(module)


@stage_task("segment", input_fields=["input"], modules=["pipelines.segment"])
def segment(config: StageConfig, beam_args: Sequence[str] | None = None) -> dict:
    """pipelines.segment: raw documents -> sentence-segmented text shards + stats.json."""
    return _stage("pipelines.segment").run(config, list(beam_args or []))


@stage_task("vocab", input_fields=["input"], modules=["pipelines.vocab"])
def vocab(config: StageConfig, beam_args: Sequence[str] | None = None) -> dict:
    """pipelines.vocab: segmented corpus -> SentencePiece model + vocab_stats.json."""
    return _stage("pipelines.vocab").run(config, list(beam_args or []))


@stage_task("tfrecords", input_fields=["input", "spm_model"], modules=["pipelines.tfrecords"])
def tfrecords(config: StageConfig, beam_args: Sequence[str] | None = None) -> dict:
    """pipelines.tfrecords: segmented corpus + vocabulary -> masked SOP TFRecords + metadata.json."""
    return _stage("pipelines.tfrecords").run(config, list(beam_args or []))


@stage_task(
    "select",
    input_fields=["input", "target_samples", "source_samples", "classifier", "spm_model"],
    modules=["pipelines.domain_select"],
)
def domain_select(config: StageConfig, beam_args: Sequence[str] | None = None) -> dict:
    """pipelines.domain_select: the most target-like documents of a segmented corpus + selection.json."""
    return _stage("pipelines.domain_select").run(config, list(beam_args or []))


@stage_task("pretrain", input_fields=["data", "init"], modules=["model.pretrain"])
def pretrain(config: StageConfig, on_metrics: Callable[[dict], None] | None = None) -> dict:
    """model.pretrain: TFRecords -> pretrained model (checkpoints, metrics.jsonl, export/).

    Training writes in place and resumes from its newest checkpoint: a retry after preemption, a
    longer --steps, another schedule or new code continue it. An output holding another training
    run (other model, vocabulary, data, seed ...) is moved aside to a new name (`run_stage` reports
    it), never deleted. The output's lock is held throughout (one writer per output). On several
    JAX hosts this is process 0's task (the others join the training only, without Prefect:
    `flows.run_config.pretrain_as_secondary_process`); it meets them when training ends.
    """
    stage = _stage("model.pretrain")
    with output_lock(config.output):
        try:
            stage.check_output(config)
        except stage.IncompatibleOutputError as error:
            moved = move_aside(config.output)
            print(f"pretrain: {error}\npretrain: moved the previous output aside to {moved}", flush=True)
        result = stage.run(config, on_metrics=on_metrics)
    if not stage.meet_other_processes():
        raise StageError(f"{config.output}: the other JAX processes did not finish training")
    return result


@stage_task("finetune", input_fields=["init", "spm_model", "data_dir"], modules=["model.finetune"])
def finetune(config: StageConfig) -> dict:
    """model.finetune: fine-tune a model on a task and score its dev set (OUTPUT/results.json)."""
    return _stage("model.finetune").run(config)


class HeldOutEvalConfig(StageConfig):
    """Held-out pretraining metrics of a model (masked-LM accuracy, perplexity, SOP accuracy)."""

    model: str = Field(description="model to score: a .keras file, a Hugging Face dir or a TF1 checkpoint")
    data: str = Field(description="held-out TFRecords: a directory, a shard or a glob")
    output: str = Field(description="directory for metrics.json")
    batch_size: int = Field(32, gt=0, description="evaluation batch size")
    max_batches: int | None = Field(None, gt=0, description="score at most this many batches (default: all)")


@stage_task("heldout", input_fields=["model", "data"], modules=["model.pretraining_metrics"])
def heldout(config: HeldOutEvalConfig) -> dict:
    """model.pretraining_metrics.evaluate_pretraining on held-out data; writes OUTPUT/metrics.json."""
    metrics = _stage("model.pretraining_metrics").evaluate_pretraining(
        config.model, config.data, config.batch_size, max_batches=config.max_batches
    )
    with atomic_output_dir(config.output) as out, open_file(join(out, "metrics.json"), "w") as handle:
        json.dump(metrics, handle, indent=2, sort_keys=True)
    return dict(metrics)


def result_storage_for(url: str) -> Any:
    """Prefect result storage at `url` (a local directory, or gs:// etc.) that reads plain-JSON
    records only; a block saved on the Prefect server, as Prefect requires of storage blocks."""
    if "://" not in url or url.startswith("file://"):
        block: Any = JsonOnlyLocalFileSystem(basepath=str(Path(url.removeprefix("file://")).resolve()))
    else:
        block = JsonOnlyRemoteFileSystem(basepath=url)
    block.save("albert-results-" + hashlib.sha256(block.basepath.encode()).hexdigest()[:16], overwrite=True)
    return block


def json_only_storage(storage: Any) -> Any:
    """`storage` (a local directory, or a block from `result_storage_for`) as a JSON-only block."""
    if isinstance(storage, _JsonOnlyReads):
        return storage
    if isinstance(storage, (str, Path)):
        return result_storage_for(str(storage))
    raise TypeError(f"result storage must be a local directory or made by result_storage_for, not {storage!r}")


def task_cache_key(stage: Task[..., Any], config: StageConfig) -> str:
    """The cache key of `stage` run on `config`: its cache policy's inputs and code
    (`flows.caching.stage_cache_key`)."""
    policy = stage.cache_policy
    return stage_cache_key(stage.name, config, policy.input_fields, policy.modules)


def holds_finished_output(config: StageConfig, output_marker: str, key: str) -> bool:
    """Whether `config.output` is the finished output of the stage run `key`: its marker file
    exists (outputs are atomic) and it records that cache key (`flows.caching.mark_output`)."""
    return exists(output_marker) and output_key(config.output) == key


def refuse_unsafe_record(stage: Task[..., Any], config: StageConfig, storage: Any) -> None:
    """Raise UnsafeResultError if the stored result `stage` would reuse for `config` is not ours.

    Prefect's own existence check deserializes a record and swallows any error (the stage would just
    re-run); checking here first turns a tampered record into a clear failure.
    """
    key = task_cache_key(stage, config)
    if exists(join(str(storage.basepath), key)):
        storage.read_path(key, _sync=True)


def discard_failure_record(state: State, storage: Any) -> None:
    """Delete the record Prefect persisted of a failed stage's exception: the result storage holds
    cached results only, and the failure itself is reported in one line."""
    if isinstance(state.data, ResultRecord) and state.data.metadata.storage_key:
        remove(join(str(storage.basepath), state.data.metadata.storage_key))


@dataclass
class StageOutcome:
    """What the flow learns from one stage: its summary, whether it came from the cache, its time."""

    name: str
    result: dict
    cached: bool
    seconds: float


def run_stage(
    stage: Task[..., Any],
    config: StageConfig,
    *,
    index: int,
    total: int,
    output_marker: str,
    result_storage: Any,
    **kwargs: Any,
) -> StageOutcome:
    """Run one stage task with a banner; a stage whose output is gone or not the cached one re-runs.

    `output_marker` is the file the stage's finished output always contains (atomic outputs make
    its presence mean the output is complete); if it is missing, or the output records another
    cache key (a run with other parameters wrote it since), the cached result is refreshed. A stage
    that runs never deletes a finished output: one made otherwise is moved aside
    (`albert.fileio.atomic_output_dir`, the pretrain task); the outcome's `moved_aside` names it.
    """
    key = task_cache_key(stage, config)
    refresh = not holds_finished_output(config, output_marker, key)
    print(f"==> [{index}/{total}] {stage.name}", flush=True)
    result_storage = json_only_storage(result_storage)
    if not refresh:
        refuse_unsafe_record(stage, config, result_storage)
    start = time.monotonic()
    earlier = set(moved_aside_copies(config.output))
    state = stage.with_options(result_storage=result_storage, refresh_cache=refresh or None)(
        config, **kwargs, return_state=True
    )
    if state.is_failed():
        discard_failure_record(state, result_storage)
    # this run's moves only (results cached by older versions of the pretrain task recorded theirs)
    result = {k: v for k, v in (state.result() or {}).items() if k != "moved_aside"}
    seconds = time.monotonic() - start
    cached = state.name == "Cached"
    if not cached:
        mark_output(config.output, key)
    moved = [path for path in moved_aside_copies(config.output) if path not in earlier]
    if moved:
        result["moved_aside"] = ", ".join(moved)
        print(f"    {stage.name}: the previous output was moved aside to {result['moved_aside']}", flush=True)
    print(f"<== [{index}/{total}] {stage.name}: {'cached' if cached else 'done'} in {seconds:.1f} s", flush=True)
    return StageOutcome(stage.name, result, cached, seconds)
