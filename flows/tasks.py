"""Thin Prefect tasks around the stages' `run` functions: cross-run caching, retries, persisted results.

Every task takes the stage's typed config as `config`; its cache key is the manifest of the files the
config's input fields name + the config + the source of the stage's packages (flows.caching). Tasks
retry transient failures (I/O, connection, preemption) with exponential backoff and never retry bad
input or configuration. The stage modules are imported when a task runs, so that importing the flows
does not load TensorFlow or Beam.
"""

from __future__ import annotations

import hashlib
import importlib
import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from prefect import task
from prefect.client.schemas.objects import TaskRun
from prefect.states import State
from prefect.tasks import Task, exponential_backoff
from pydantic import Field

from albert.config import ConfigError, StageConfig
from albert.fileio import atomic_output_dir, exists, join, open_file
from albert.stage import StageError
from flows.caching import StageCachePolicy, claim_output, stage_cache_key

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
    name: str, input_fields: Sequence[str], packages: Sequence[str]
) -> Callable[[Callable[..., Any]], Task[..., Any]]:
    """Decorator: a stage task cached on (inputs, config, code) that retries transient failures."""
    return task(
        name=name,
        task_run_name=f"{name}",
        cache_policy=StageCachePolicy(input_fields=tuple(input_fields), packages=tuple(packages)),
        persist_result=True,
        retries=RETRIES,
        retry_delay_seconds=exponential_backoff(RETRY_BACKOFF_SECONDS),
        retry_condition_fn=retry_if_transient,
    )


def _stage(module: str) -> Any:
    return importlib.import_module(module)


@stage_task("segment", input_fields=["input"], packages=["albert", "pipelines"])
def segment(config: StageConfig, beam_args: Sequence[str] | None = None) -> dict:
    """pipelines.segment: raw documents -> sentence-segmented text shards + stats.json."""
    return _stage("pipelines.segment").run(config, list(beam_args or []))


@stage_task("vocab", input_fields=["input"], packages=["albert", "pipelines"])
def vocab(config: StageConfig, beam_args: Sequence[str] | None = None) -> dict:
    """pipelines.vocab: segmented corpus -> SentencePiece model + vocab_stats.json."""
    return _stage("pipelines.vocab").run(config, list(beam_args or []))


@stage_task("tfrecords", input_fields=["input", "spm_model"], packages=["albert", "pipelines"])
def tfrecords(config: StageConfig, beam_args: Sequence[str] | None = None) -> dict:
    """pipelines.tfrecords: segmented corpus + vocabulary -> masked SOP TFRecords + metadata.json."""
    return _stage("pipelines.tfrecords").run(config, list(beam_args or []))


@stage_task(
    "select",
    input_fields=["input", "target_samples", "source_samples", "classifier", "spm_model"],
    packages=["albert", "pipelines", "model"],
)
def domain_select(config: StageConfig, beam_args: Sequence[str] | None = None) -> dict:
    """pipelines.domain_select: the most target-like documents of a segmented corpus + selection.json."""
    return _stage("pipelines.domain_select").run(config, list(beam_args or []))


PRETRAIN_INPUTS, PRETRAIN_PACKAGES = ("data", "init"), ("albert", "model")


@stage_task("pretrain", input_fields=PRETRAIN_INPUTS, packages=PRETRAIN_PACKAGES)
def pretrain(config: StageConfig, on_metrics: Callable[[dict], None] | None = None) -> dict:
    """model.pretrain: TFRecords -> pretrained model (checkpoints, metrics.jsonl, export/).

    Training writes in place and resumes from its newest checkpoint, so a retry after preemption
    continues where it stopped; an output left by other data or parameters is cleared first.
    """
    claim_output(config.output, stage_cache_key("pretrain", config, PRETRAIN_INPUTS, PRETRAIN_PACKAGES))
    return _stage("model.pretrain").run(config, on_metrics=on_metrics)


class HeldOutEvalConfig(StageConfig):
    """Held-out pretraining metrics of a model (masked-LM accuracy, perplexity, SOP accuracy)."""

    model: str = Field(description="model to score: a .keras file, a Hugging Face dir or a TF1 checkpoint")
    data: str = Field(description="held-out TFRecords: a directory, a shard or a glob")
    output: str = Field(description="directory for metrics.json")
    batch_size: int = Field(32, gt=0, description="evaluation batch size")
    max_batches: int | None = Field(None, gt=0, description="score at most this many batches (default: all)")


@stage_task("evaluate", input_fields=["model", "data"], packages=["albert", "model"])
def evaluate(config: HeldOutEvalConfig) -> dict:
    """model.pretrain_eval.evaluate_pretraining on held-out data; writes OUTPUT/metrics.json."""
    metrics = _stage("model.pretrain_eval").evaluate_pretraining(
        config.model, config.data, config.batch_size, max_batches=config.max_batches
    )
    with atomic_output_dir(config.output) as out, open_file(join(out, "metrics.json"), "w") as handle:
        json.dump(metrics, handle, indent=2, sort_keys=True)
    return dict(metrics)


def result_storage_for(url: str) -> Any:
    """Prefect result storage at `url`: a local directory, or a saved remote block for gs:// etc."""
    if "://" not in url or url.startswith("file://"):
        return Path(url.removeprefix("file://")).resolve()
    from prefect.filesystems import RemoteFileSystem

    block = RemoteFileSystem(basepath=url)
    block.save("albert-results-" + hashlib.sha256(url.encode()).hexdigest()[:16], overwrite=True)
    return block


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
    """Run one stage task with a banner; a stage whose output marker file is gone re-runs.

    `output_marker` is the file the stage's finished output always contains (atomic outputs make
    its presence mean the output is complete); if it is missing, the cached result is refreshed.
    """
    refresh = not exists(output_marker)
    print(f"==> [{index}/{total}] {stage.name}", flush=True)
    start = time.monotonic()
    state = stage.with_options(result_storage=result_storage, refresh_cache=refresh or None)(
        config, **kwargs, return_state=True
    )
    result = state.result()
    seconds = time.monotonic() - start
    cached = state.name == "Cached"
    print(f"<== [{index}/{total}] {stage.name}: {'cached' if cached else 'done'} in {seconds:.1f} s", flush=True)
    return StageOutcome(stage.name, dict(result or {}), cached, seconds)
