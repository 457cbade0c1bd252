"""Thin Prefect tasks around the stages' `run` functions: cross-run caching, retries, persisted
results.

Each stage's module, input fields and output marker come from the registry (albert.stages). Every
task takes the stage's typed config as `config`; its cache key is the manifest of the files the
config's input fields name + the config + the source of the modules the stage runs
(flows.engine.caching). Tasks retry transient failures (I/O, connection, preemption) with
exponential backoff and never retry bad input or configuration (flows.engine.retry). The stage
modules are imported when a task runs, so that importing the flows does not load TensorFlow or Beam.

Results are persisted as plain JSON only, in storage that reads back nothing else
(`flows.engine.result_storage`); a stored record a stage would reuse is checked before the task runs
(`refuse_unsafe_record`).

A pretraining stopped by SIGTERM or SIGINT once its checkpoint is saved ends its task run in a
Cancelled state named "Interrupted" (`interrupted`), not Failed: nothing is cached or retried, and
`run_stage` raises `albert.errors.Interrupted` for the flow to end the same way; the same command
then finds the stages before it cached and resumes the training from that checkpoint."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from prefect import task
from prefect.exceptions import CancelledRun
from prefect.states import Cancelled, State
from prefect.tasks import Task

from albert.config import StageConfig
from albert.errors import Interrupted, StageError
from albert.fs import exists, join
from albert.locks import output_lock
from albert.outputs import check_writable, move_aside, moved_aside_copies
from albert.stages import STAGES, stage_module
from flows.engine import prefect_settings
from flows.engine.caching import StageCachePolicy, mark_output, output_key, stage_cache_key
from flows.engine.result_storage import (
    PlainJsonSerializer,
    discard_failure_record,
    json_only_storage,
)
from flows.engine.retry import retry_options

INTERRUPTED = "Interrupted"
"""The name of the Cancelled state of a task or flow run stopped by a signal with its work saved."""


def interrupted(stop: Interrupted) -> State:
    """The final state of a task or flow run that `stop` ended: Cancelled, named "Interrupted", its
    message saying where the work was saved."""
    return Cancelled(name=INTERRUPTED, message=str(stop))


def resumable_flow_run(flow_function, config, *args):
    """Call a flow on `config`, once Prefect's directories and the run's own (its run directory,
    a line) are known to be writable (else one line, exit 2: `writable_environment`); a flow run
    that ended `interrupted` (it returned that state) raises `Interrupted` again, for the command
    to exit 75: the same command resumes it. A temporary server that does not start is one line
    (`prefect_settings.server_failure`)."""
    writable_environment(config)
    try:
        return flow_function(config, *args)
    except CancelledRun as cancelled:
        raise Interrupted(str(cancelled)) from None
    except RuntimeError as error:
        failure = prefect_settings.server_failure(error)
        if failure is None:
            raise
        raise failure from error


def writable_environment(config) -> None:
    """Before any work: Prefect's directories (`prefect_settings.check_environment`), then where
    the flow writes, can be written: the config's model line (a night works inside it), else its
    run directory; else ConfigError / StageError naming the setting or path and the reason."""
    prefect_settings.check_environment()
    field = "line" if getattr(config, "line", None) is not None else "run_dir"
    if getattr(config, field, None) is not None:
        path, setting = str(getattr(config, field)), f"{type(config).__name__}.{field}"
        check_writable(path, setting, keep_made=True)


def stage_task(
    name: str, input_fields: Sequence[str], modules: Sequence[str], output_marker: str
) -> Callable[[Callable[..., Any]], Task[..., Any]]:
    """Decorator: a stage task cached on (inputs, config, code of `modules`) that retries transient
    failures, its result persisted as plain JSON; `output_marker` is the file its finished output
    always contains (`run_stage`)."""
    return task(
        name=name,
        task_run_name=f"{name}",
        cache_policy=StageCachePolicy(
            input_fields=tuple(input_fields), modules=tuple(modules), output_marker=output_marker
        ),
        persist_result=True,
        result_serializer=PlainJsonSerializer(),
        **retry_options(),
    )


def registered_task(name: str, *wrappers: str) -> Callable[[Callable[..., Any]], Task[..., Any]]:
    """`stage_task` of the registered stage `name`: its input fields, module and output marker
    are read from `albert.stages.STAGES`; `wrappers` are the flows' modules that run the stage
    (their code is part of the cache key's code version, beside the stage's)."""
    stage = STAGES[name]
    return stage_task(name, stage.input_fields, (stage.module, *wrappers), stage.output_marker)


@registered_task("segment")
def segment(config: StageConfig, beam_args: Sequence[str] | None = None) -> dict:
    """Raw documents -> sentence-segmented text shards + stats.json."""
    return stage_module("segment").run(config, list(beam_args or []))


@registered_task("vocab")
def vocab(config: StageConfig, beam_args: Sequence[str] | None = None) -> dict:
    """Segmented corpus -> SentencePiece model + vocab_stats.json."""
    return stage_module("vocab").run(config, list(beam_args or []))


@registered_task("tfrecords")
def tfrecords(config: StageConfig, beam_args: Sequence[str] | None = None) -> dict:
    """Segmented corpus + vocabulary -> masked SOP TFRecords + metadata.json."""
    return stage_module("tfrecords").run(config, list(beam_args or []))


@registered_task("decontaminate")
def decontaminate(config: StageConfig, beam_args: Sequence[str] | None = None) -> dict:
    """Segmented corpus + evaluation sets -> contamination.json (and the cleaned corpus)."""
    return stage_module("decontaminate").run(config, list(beam_args or []))


@registered_task("select")
def domain_select(config: StageConfig, beam_args: Sequence[str] | None = None) -> dict:
    """The most target-like documents of a segmented corpus + selection.json."""
    return stage_module("select").run(config, list(beam_args or []))


@registered_task("predict", "flows.predict")
def predict(config: StageConfig, beam_args: Sequence[str] | None = None) -> dict:
    """flows.predict (the pipeline and the fine-tuned model it runs): a fine-tuned model + files ->
    sharded JSONL predictions + predict.json."""
    from flows.predict import run  # heavy: Beam and the model's loader

    return run(config, list(beam_args or []))


@registered_task("pretrain")
def pretrain(config: StageConfig, on_metrics: Callable[[dict], None] | None = None) -> dict:
    """TFRecords -> pretrained model (checkpoints, metrics.jsonl, export/).

    Training writes in place and resumes from its newest checkpoint: a retry after preemption, a
    longer --steps, another schedule or new code continue it. An output holding another training
    run (other model, vocabulary, data, seed ...) is moved aside to a new name (`run_stage` reports
    it), never deleted. The output's lock is held throughout (one writer per output). On several
    JAX hosts this is process 0's task (the others join the training only, without Prefect:
    `flows.secondary_process.pretrain_as_secondary_process`); it meets them when training ends.
    Stopped by a signal once its checkpoint is saved, the task run ends `interrupted`.
    """
    stage = stage_module("pretrain")
    with output_lock(config.output):
        try:
            stage.check_output(config)
        except stage.IncompatibleOutputError as error:
            moved = move_aside(config.output)
            print(
                f"pretrain: {error}\npretrain: moved the previous output aside to {moved}",
                flush=True,
            )
        try:
            result = stage.run(config, on_metrics=on_metrics)
        except Interrupted as stop:  # checkpoint saved: Cancelled, not Failed (no retry, no cache)
            return interrupted(stop)
    if not stage.meet_other_processes():
        raise StageError(f"{config.output}: the other JAX processes did not finish training")
    return result


@registered_task("finetune", "flows.finetune")
def finetune(config: StageConfig) -> dict:
    """flows.finetune: (further pretrain and) fine-tune a model on a task, score its dev set
    (OUTPUT/results.json). Further pretraining or fine-tuning stopped by a signal (its checkpoint
    saved, the flow's re-run resumes it) ends the task run `interrupted`."""
    from flows.finetune import run  # the model.finetune stage with its further pretraining

    try:
        return run(config)
    except Interrupted as stop:
        return interrupted(stop)


@registered_task("distill")
def distill(config: StageConfig) -> dict:
    """model.distill: distil a fine-tuned teacher into a smaller student on its task
    (OUTPUT/results.json, distillation.md). Stopped by a signal, its checkpoint saved, the task run
    ends `interrupted` and the flow's re-run resumes it."""
    try:
        return stage_module("distill").run(config)
    except Interrupted as stop:
        return interrupted(stop)


@registered_task("heldout")
def heldout(config: StageConfig) -> dict:
    """model.evaluation.heldout_stage: held-out pretraining metrics of a model on held-out data
    (OUTPUT/metrics.json)."""
    return stage_module("heldout").run(config)


def task_cache_key(stage: Task[..., Any], config: StageConfig) -> str:
    """The cache key of `stage` run on `config`: its cache policy's inputs and code
    (`flows.engine.caching.stage_cache_key`)."""
    policy = stage.cache_policy
    return stage_cache_key(stage.name, config, policy.input_fields, policy.modules)


def output_marker(stage: Task[..., Any], config: StageConfig) -> str:
    """The file that the finished output of `stage` run on `config` always contains (atomic
    outputs make its presence mean the output is complete)."""
    return join(config.output, stage.cache_policy.output_marker)


def holds_finished_output(stage: Task[..., Any], config: StageConfig, key: str) -> bool:
    """Whether `config.output` is the finished output of the stage run `key`: its marker file
    exists and it records that cache key (`flows.engine.caching.mark_output`)."""
    return exists(output_marker(stage, config)) and output_key(config.output) == key


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
    """What the flow learns from one stage: its summary, whether it came from the cache, its
    time."""

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
    result_storage: Any,
    **kwargs: Any,
) -> StageOutcome:
    """Run one stage task with a banner; a stage whose output is gone or not the cached one re-runs.

    If the stage's output marker (`output_marker`) is missing, or the output records another
    cache key (a run with other parameters wrote it since), the cached result is refreshed. A stage
    that ends `interrupted` raises `Interrupted`. A stage that runs never deletes a finished output:
    one made otherwise is moved aside (`albert.outputs.atomic_output_dir`, the pretrain task); the
    outcome's `moved_aside` names it.
    """
    key = task_cache_key(stage, config)
    refresh = not holds_finished_output(stage, config, key)
    print(f"==> [{index}/{total}] {stage.name}", flush=True)
    result_storage = json_only_storage(result_storage)
    if not refresh:
        refuse_unsafe_record(stage, config, result_storage)
    start = time.monotonic()
    earlier = set(moved_aside_copies(config.output))
    state = stage.with_options(result_storage=result_storage, refresh_cache=refresh or None)(
        config, **kwargs, return_state=True
    )
    if state.is_cancelled() and state.name == INTERRUPTED:
        print(f"<== [{index}/{total}] {stage.name}: interrupted, {state.message}", flush=True)
        raise Interrupted(state.message)
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
