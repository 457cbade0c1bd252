"""A several-host run's flow on a JAX process other than 0: it waits for process 0's data stage,
then joins the pretrain stage only (no Prefect run, lock or report: process 0 runs the flow)."""

from __future__ import annotations

import time
from typing import Any

from prefect.tasks import Task

from albert.config import StageConfig
from albert.errors import StageError
from albert.fs import exists
from flows.engine import tasks
from flows.run_config import RunConfig
from model.pretrain import run as pretrain_run


def finished_output(stage: Task[..., Any], config: StageConfig) -> bool:
    """Whether `config.output` holds `stage`'s finished output for exactly this config and inputs,
    as `tasks.run_stage` decides it; the key is hashed only once the marker is there (polled)."""
    if not exists(tasks.output_marker(stage, config)):
        return False
    return tasks.holds_finished_output(stage, config, tasks.task_cache_key(stage, config))


def pretrain_as_secondary_process(
    config: RunConfig,
    data: tuple[Task[..., Any], StageConfig],
    pretrain: StageConfig,
    *,
    poll_seconds: float = 2.0,
) -> dict[str, Any]:
    """A flow on JAX process `config.process_id` > 0 of several: wait (at most
    `config.data_wait_seconds`) until process 0's flow has finished the data stage `data`
    (task, config), then join the pretrain stage, unless its output is already finished
    with these settings (process 0's flow then finds it cached and trains nothing). No Prefect run,
    lock or report here: process 0 runs the flow and is the only one that writes (model.pretrain);
    the flow's `main` then leaves the JAX job (`model.runtime.distribute.leave_jax_cluster`)."""
    stage, data_config = data
    if finished_output(tasks.pretrain, pretrain):
        print(
            f"process {config.process_id}: {pretrain.output} is already trained with these "
            "settings; nothing to join",
            flush=True,
        )
        return {"run_dir": config.run_dir, "process_id": config.process_id, "pretrain": None}
    deadline = time.monotonic() + config.data_wait_seconds
    print(
        f"process {config.process_id}: waiting for process 0's {stage.name} output "
        f"{data_config.output}",
        flush=True,
    )
    while not finished_output(stage, data_config):
        if time.monotonic() > deadline:
            raise StageError(
                f"{data_config.output}: process 0 did not finish the {stage.name} stage within "
                f"{config.data_wait_seconds:g} s (--data-wait-seconds)"
            )
        time.sleep(poll_seconds)
    print(f"process {config.process_id}: joining the pretrain stage", flush=True)
    result = pretrain_run(pretrain)
    print(
        f"process {config.process_id}: pretrain done; process 0 writes the outputs and the "
        f"report under {config.run_dir}",
        flush=True,
    )
    return {"run_dir": config.run_dir, "process_id": config.process_id, "pretrain": result}
