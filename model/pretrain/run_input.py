"""A pretraining run's training input: its options, its input workers sized from the measured
step (`model.input.retune`) and its batches placed on the devices ahead of the step
(`model.input.prefetch`, on JAX)."""

from __future__ import annotations

import contextlib

from model.input import source as pretrain_input
from model.input.retune import RetunedBatches, seconds_per_item
from model.input.source import uses_grain
from model.pretrain.config import PretrainConfig
from model.runtime import cores

PROBE_BATCHES = 4  # batches prepared in this process to time the input's cost of one
PROBE_STEPS = 8  # steady steps timed before the workers are sized


def input_options(config: PretrainConfig, process=(0, 1)) -> dict:
    """The input's options from the run's settings: seed, window, workers (`model.runtime.cores`),
    length buckets, packing (instances per row) and, with several processes, this process's
    (index, count)."""
    return {
        "seed": config.seed,
        "shuffle_buffer": config.shuffle_buffer,
        "workers": cores.input_workers(
            config.input_workers, cores.on_accelerator(bool(config.tpu))
        ),
        **({"length_buckets": config.length_buckets} if config.length_buckets else {}),
        **({"packing": config.packing_instances} if config.packing == "on" else {}),
        **({"process": process} if process[1] > 1 else {}),
    }


def sized_from_the_step(config: PretrainConfig) -> bool:
    """Are the input workers sized from the measured step? With --input-workers left to its
    default, on Grain (whose batches are the same for any count, and whose stream reopens at any
    position) with the step on an accelerator (on CPU the step needs the cores: 0 workers)."""
    return (
        config.input_workers is None
        and uses_grain(config.input)
        and cores.on_accelerator(bool(config.tpu))
    )


def training_batches(
    config: PretrainConfig, spec, engine, epoch: int, batch_in_epoch: int, process=(0, 1)
):
    """A context manager: the run's training batches as (epoch, batch in epoch, batch) from this
    position on, across epochs, with the global loss denominators (Grain or tf.data, as --input and
    the backend say: `model.input.source.run_batches`), each a batch `engine` takes; the input
    (Grain's worker processes included) is closed when the block ends. Sized from the step
    (`sized_from_the_step`): a `RetunedBatches` that starts without worker processes."""
    options = input_options(config, process)

    def open_stream(workers: int, epoch: int, skip: int):
        return pretrain_input.run_batches(
            spec,
            config.batch_size,
            config.input,
            epoch=epoch,
            skip_batches=skip,
            to_batches=engine.batches,
            **{**options, "workers": workers},
        )

    if not sized_from_the_step(config):
        return open_stream(options["workers"], epoch, batch_in_epoch)
    return RetunedBatches(open_stream, 0, epoch, batch_in_epoch)


def batch_seconds(config: PretrainConfig, spec, epoch: int, process=(0, 1)) -> float:
    """What preparing one training batch costs one worker: seconds a batch over `PROBE_BATCHES` of
    `epoch`'s first batches, prepared in this process."""
    options = {**input_options(config, process), "workers": 0}
    with pretrain_input.run_batches(
        spec, config.batch_size, config.input, epoch=epoch, **options
    ) as items:
        return seconds_per_item(items, PROBE_BATCHES)


def sizing(config: PretrainConfig, spec, batches, epoch: int, process=(0, 1)):
    """The trainer's `size_input(step_seconds)` for `batches` (a `RetunedBatches`): the workers
    `cores.workers_for` gives from this input's measured cost of a batch and the step's time; None
    for an input not sized from the step."""
    if not isinstance(batches, RetunedBatches):
        return None
    cost = batch_seconds(config, spec, epoch, process)

    def size_input(step_seconds: float) -> int:
        workers = cores.workers_for(cost, step_seconds, cores.available_cores())
        batches.retune(workers)
        return workers

    return size_input


def device_batches(engine, batches):
    """A context manager: `batches` placed on the devices ahead of the step where the engine does
    that (`JaxTraining.prefetched`), else as they are."""
    prefetched = getattr(engine, "prefetched", None)
    return prefetched(batches) if prefetched else contextlib.nullcontext(batches)
