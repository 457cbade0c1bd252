"""Thin Prefect tasks around the stages' `run` functions: cross-run caching, retries, persisted results.

Every task takes the stage's typed config as `config`; its cache key is the manifest of the files the
config's input fields name + the config + the source of the modules the stage runs (flows.caching). Tasks
retry transient failures (I/O, connection, preemption) with exponential backoff and never retry bad
input or configuration. The stage modules are imported when a task runs, so that importing the flows
does not load TensorFlow or Beam.

Results are persisted as plain JSON only, in storage that reads back nothing else
(`flows.result_storage`); a stored record a stage would reuse is checked before the task runs
(`refuse_unsafe_record`).
"""

from __future__ import annotations

import importlib
import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from prefect import task
from prefect.client.schemas.objects import TaskRun
from prefect.states import State
from prefect.tasks import Task, exponential_backoff
from pydantic import Field

from albert.config import ConfigError, StageConfig
from albert.errors import StageError
from albert.fs import exists, join, open_file
from albert.locks import output_lock
from albert.outputs import atomic_output_dir, move_aside, moved_aside_copies
from flows.caching import StageCachePolicy, mark_output, output_key, stage_cache_key
from flows.result_storage import PlainJsonSerializer, discard_failure_record, json_only_storage

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
            print(
                f"pretrain: {error}\npretrain: moved the previous output aside to {moved}",
                flush=True,
            )
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

    model: str = Field(
        description="model to score: a .keras file, a Hugging Face dir or a TF1 checkpoint"
    )
    data: str = Field(description="held-out TFRecords: a directory, a shard or a glob")
    output: str = Field(description="directory for metrics.json")
    batch_size: int = Field(32, gt=0, description="evaluation batch size")
    max_batches: int | None = Field(
        None, gt=0, description="score at most this many batches (default: all)"
    )


@stage_task("heldout", input_fields=["model", "data"], modules=["model.pretraining_metrics"])
def heldout(config: HeldOutEvalConfig) -> dict:
    """model.pretraining_metrics.evaluate_pretraining on held-out data; writes OUTPUT/metrics.json."""
    metrics = _stage("model.pretraining_metrics").evaluate_pretraining(
        config.model, config.data, config.batch_size, max_batches=config.max_batches
    )
    with (
        atomic_output_dir(config.output) as out,
        open_file(join(out, "metrics.json"), "w") as handle,
    ):
        json.dump(metrics, handle, indent=2, sort_keys=True)
    return dict(metrics)


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
    (`albert.atomic_output_dir`, the pretrain task); the outcome's `moved_aside` names it.
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
        print(
            f"    {stage.name}: the previous output was moved aside to {result['moved_aside']}",
            flush=True,
        )
    print(
        f"<== [{index}/{total}] {stage.name}: {'cached' if cached else 'done'} in {seconds:.1f} s",
        flush=True,
    )
    return StageOutcome(stage.name, result, cached, seconds)
