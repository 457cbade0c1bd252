"""`run`: one pretraining run, from the data and OUTPUT's newest checkpoint to the final
checkpoint and export."""

from __future__ import annotations

import contextlib
import hashlib
import logging
from collections.abc import Callable

import numpy as np

from albert.errors import StageError
from albert.fs import join
from albert.locks import output_lock
from albert.outputs import check_writable, remove_leftovers
from model.checkpoints import store as checkpointing
from model.checkpoints.manager import Checkpoints
from model.input import length_buckets
from model.input import records as pretrain_records
from model.input.packing import DEFAULT_INSTANCES
from model.input.source import uses_grain
from model.pretrain.build import build_training, restore, weights_digest
from model.pretrain.config import PRECISION_POLICIES, PretrainConfig
from model.pretrain.export import export_alone
from model.pretrain.identity import (
    data_spec,
    resolve_vocab,
    resumable_checkpoint,
    training_identity,
)
from model.pretrain.jax_step import JaxTraining
from model.pretrain.run_input import device_batches, sizing, training_batches
from model.pretrain.run_log import RunLog
from model.pretrain.tf_step import TfTraining
from model.pretrain.time_budget import TrainingClock
from model.pretrain.trainer import Trainer
from model.runtime import cores, distribute, preemption

logger = logging.getLogger(__name__)


def run(
    config: PretrainConfig,
    on_metrics: Callable[[dict], None] | None = None,
    clock: Callable[[], float] | None = None,
) -> dict:
    """Train per `config`; return final training and held-out metrics, paths and throughput.

    `on_metrics` (optional) receives every record written to metrics.jsonl (e.g. for progress
    artifacts in a Prefect flow); `clock` (optional, seconds) times --time-budget instead of
    time.monotonic. Once the cluster is joined, SIGTERM or SIGINT stops the run after a checkpoint
    at a step every process agrees on, with `albert.errors.Interrupted` (`model.runtime.preemption`,
    the mode from the process count)."""
    check_writable(config.output, "PretrainConfig.output")  # before any work
    for flag in config.ignored_settings():
        logger.warning("%s applies to --objective rtd only: this mlm run ignores it", flag)
    import keras  # heavy: Keras loads its backend; this module stays importable without it

    backend = keras.config.backend()
    join_cluster(config, backend)
    process = distribute.jax_process()
    with preemption.stop_on_signals(preemption.signal_mode(backend, process[1])) as stop:
        return train(config, backend, process, stop, on_metrics, clock)


def train(
    config: PretrainConfig,
    backend: str,
    process: tuple[int, int],
    stop: preemption.StopRequest,
    on_metrics: Callable[[dict], None] | None,
    clock: Callable[[], float] | None,
) -> dict:
    """`run` once the cluster is joined and the signals are `stop`'s."""
    strategy, distribution, replicas = select_devices(config, backend)
    spec = data_spec(config)
    config = with_length_buckets(config, spec)
    vocab_size, vocab_sha = resolve_vocab(config, spec)
    identity = training_identity(config, spec, vocab_size, vocab_sha)
    with (
        distribute.naming_failed_processes(config.heartbeat_timeout),
        keras_settings(config, backend, distribution),
        contextlib.ExitStack() as held,
    ):
        check_batch_size(config, replicas)
        check_input(config, process)
        chief = distribute.is_chief()
        if chief:  # the output's lock, held by the chief until the run ends
            held.enter_context(output_lock(config.output))
            for name in ("checkpoints/ckpt-*", "export", "metrics.jsonl"):
                remove_leftovers(join(config.output, name))
            checkpointing.set_aside_damaged(join(config.output, "checkpoints"))
        latest = resumable_checkpoint(config, identity)
        check_same_run(config, latest, process)
        model, optimizer, schedule = build_training(config, spec, strategy, vocab_size, vocab_sha)
        if config.check_data:
            counts = pretrain_records.check_shards(spec.files, vocab_size)
            pretrain_records.check_heldout_not_empty(spec, counts)
        state = restore(config, latest, model, optimizer)
        log = RunLog(
            config.output,
            config.steps if config.budget_seconds is None else None,
            state.get("records"),
            state["step"],
            chief,
            config.progress,
            on_metrics,
        )
        engine = training_engine(
            config, backend, model, optimizer, strategy, distribution, replicas
        )
        checkpoints = Checkpoints(
            join(config.output, "checkpoints"),
            config.checkpoint_every,
            config.keep_checkpoints,
            chief,
            stop,
        )
        # its write in flight commits before the lock goes
        held.enter_context(checkpoints)
        trainer = Trainer(
            config,
            spec,
            model,
            optimizer,
            schedule,
            engine,
            log,
            identity,
            chief,
            state,
            TrainingClock(state.get("training_seconds", 0.0), clock),
            checkpoints,
        )
        with (
            training_batches(
                config, spec, engine, trainer.epoch, trainer.batch_in_epoch, process
            ) as batches,
            device_batches(engine, batches) as placed,
        ):  # the prefetch thread stopped, then the input closed, when training ends or fails
            trainer.size_input = sizing(config, spec, batches, trainer.epoch, process)
            trainer.train(placed)

        heldout = trainer.heldout_metrics()
        # finished before: its records and checkpoint stand
        if latest is not None and latest.step == trainer.step:
            final_checkpoint = latest.path
        else:  # the final record first, so that the final checkpoint counts it
            log.record({"step": trainer.step, "split": "heldout", **heldout})
            final_checkpoint = trainer.save(final=True)
        exported, skipped = (
            export_alone(model, trained(config, trainer.step), spec, heldout)
            if config.export and chief
            else ({}, {})
        )
        return {
            "steps": trainer.step,
            **(
                {"time_budget": config.time_budget, **trainer.budget_record()}
                if config.time_budget
                else {}
            ),
            "train": trainer.train_metrics,
            "heldout": heldout,
            "checkpoint": final_checkpoint,
            "export": exported,
            **({"export_skipped": skipped} if skipped else {}),
            "metrics": log.path if chief else None,
            "backend": backend,
            "replicas": replicas,
            "length_buckets": config.length_buckets,
            "packing": config.packing_instances or 0,
            "step_compilations": engine.compilations(),
            "sequences_per_second": trainer.sequences_per_second,
            **trainer.loop_figures,
            "weights_sha256": weights_digest(model),
        }


def with_length_buckets(config: PretrainConfig, spec) -> PretrainConfig:
    """`config` with --packing, --packing-instances and --length-buckets decided: as given; left to
    their defaults, a resumed run's own (its newest checkpoint's; one recording no packing packed
    none), else packing on with an accelerator unless buckets are asked for (`DEFAULT_INSTANCES` a
    row) and `model.input.length_buckets.default_buckets` for this hardware and data. Packed rows
    have one shape: no buckets (a StageError when `--packing on` has them)."""
    latest = checkpointing.latest_checkpoint(join(config.output, "checkpoints"))
    recorded = None
    if latest is not None and config.resume:
        recorded = checkpointing.read_state(latest.path).get("identity") or {}
    packing, instances = config.packing, config.packing_instances
    if packing == "auto":
        on_accelerator = cores.on_accelerator(bool(config.tpu))
        packing = recorded.get("packing", "off") if recorded is not None else None
        packing = packing or ("on" if on_accelerator and not config.length_buckets else "off")
    if packing == "on":
        if config.length_buckets:
            raise StageError(
                f"--length-buckets {config.length_buckets} with --packing on: packed rows have "
                "one shape; give one of them"
            )
        instances = instances or (recorded or {}).get("packing_instances") or DEFAULT_INSTANCES
        update = {"packing": "on", "packing_instances": instances, "length_buckets": 0}
        return config.model_copy(update=update)
    config = config.model_copy(update={"packing": "off", "packing_instances": None})
    if config.length_buckets is not None:
        return config
    buckets = (recorded or {}).get("length_buckets")
    if buckets is None:
        buckets = length_buckets.default_buckets(
            spec, cores.on_accelerator(bool(config.tpu)), uses_grain(config.input)
        )
    return config.model_copy(update={"length_buckets": buckets})


def trained(config: PretrainConfig, steps: int) -> PretrainConfig:
    """`config` as the model card states it: under --time-budget, the steps the budget allowed."""
    return config if config.time_budget is None else config.model_copy(update={"steps": steps})


def join_cluster(config: PretrainConfig, backend: str) -> None:
    """On JAX, join the multi-process job the flags (or TF_CONFIG, or JAX's cluster detection)
    describe, before anything touches a device; the flags on TensorFlow are a StageError."""

    flags = (config.coordinator, config.num_processes, config.process_id)
    if backend != "jax":
        if any(flag is not None for flag in flags):
            raise StageError(
                "--coordinator, --num-processes and --process-id start JAX's runtime "
                f"(KERAS_BACKEND=jax); this run uses {backend}, whose workers read "
                f"TF_CONFIG"
            )
        return
    cluster = distribute.jax_cluster(*flags)
    if cluster is not None:
        distribute.join_jax_cluster(cluster, config.heartbeat_timeout)


def check_input(config: PretrainConfig, process: tuple[int, int]) -> None:
    """Several JAX processes each read their rows of every batch, which the Grain input provides;
    they train for --steps (each has its own clock)."""

    if process[1] > 1 and config.time_budget is not None:
        raise StageError(
            f"--time-budget runs in one process: {process[1]} processes would each keep their own "
            f"clock; use --steps"
        )
    if process[1] > 1 and not uses_grain(config.input):
        raise StageError(
            f"--input {config.input} feeds one process; {process[1]} processes read "
            f"with Grain (--input auto or grain)"
        )


def check_same_run(config: PretrainConfig, latest, process: tuple[int, int]) -> None:
    """Every process runs the same settings (only --process-id differs) and resumes from the same
    checkpoint (--output must be one location all hosts see); else StageError, one line."""
    if process[1] == 1:
        return

    from jax.experimental import multihost_utils  # heavy: JAX, only this path

    settings = config.model_dump_json(exclude={"process_id"}).encode()
    digest = int.from_bytes(hashlib.sha256(settings).digest()[:7], "big")
    mine = [latest.step if latest else -1, digest]
    steps, digests = multihost_utils.process_allgather(np.asarray(mine, np.int64)).T.tolist()
    if len(set(digests)) > 1:
        raise StageError(
            "the processes run different settings: every host runs the same command, "
            "only --process-id differs"
        )
    if len(set(steps)) > 1:
        seen = ", ".join(
            f"process {i}: {f'step {s}' if s >= 0 else 'none'}" for i, s in enumerate(steps)
        )
        raise StageError(
            f"{config.output}: the processes find different newest checkpoints "
            f"({seen}); --output must be one location every host sees (gs:// or a "
            f"shared filesystem)"
        )


def select_devices(config: PretrainConfig, backend: str):
    """(tf.distribute strategy, JAX distribution, replicas) for this backend and the hardware found.

    On TensorFlow this comes before any TensorFlow op: MultiWorkerMirroredStrategy must configure
    the runtime first."""

    if backend == "jax":
        if config.precision == "float16":
            raise StageError(
                "--precision float16 (loss scaling) needs the TensorFlow backend; use bfloat16 on "
                "JAX"
            )
        distribution = distribute.jax_data_parallel()
        return (
            None,
            distribution,
            len(distribution.device_mesh.devices.flatten()) if distribution else 1,
        )
    strategy = distribute.select_strategy(config.tpu)
    return strategy, None, strategy.num_replicas_in_sync


@contextlib.contextmanager
def keras_settings(config: PretrainConfig, backend: str, distribution):
    """Keras' dtype policy per --precision and the JAX distribution for the run; restored after
    it."""
    import keras  # heavy: Keras loads its backend; this module stays importable without it

    previous_policy = keras.config.dtype_policy()
    keras.config.set_dtype_policy(PRECISION_POLICIES[config.precision])
    if distribution is not None:
        keras.distribution.set_distribution(distribution)
    try:
        yield
    finally:
        keras.config.set_dtype_policy(previous_policy)
        if backend == "jax":
            keras.distribution.set_distribution(None)


def check_batch_size(config: PretrainConfig, replicas: int) -> None:
    if config.batch_size % (replicas * config.gradient_accumulation):
        raise StageError(
            f"--batch-size {config.batch_size} must be divisible by replicas ({replicas}) x "
            f"--gradient-accumulation ({config.gradient_accumulation})"
        )


def training_engine(
    config: PretrainConfig, backend: str, model, optimizer, strategy, distribution, replicas: int
):
    """The backend's training step, weight sync and batch iterator (`TfTraining` or
    `JaxTraining`)."""
    if backend == "jax":
        return JaxTraining(model, optimizer, config, distribution)

    return TfTraining(model, optimizer, config, strategy, replicas)
