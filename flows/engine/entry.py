"""A flow's `python -m` entry: its flags parsed into its config, the flow run under the flows'
Prefect defaults, and the exit on several JAX hosts."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from albert.config import StageConfig
from albert.stage import stage_main
from flows.engine.prefect_settings import flow_defaults
from model.runtime.distribute import leave_jax_cluster


def flow_main(
    config_cls: type[StageConfig],
    run: Callable[[Any, Sequence[str] | None], Any],
    argv: Sequence[str] | None,
    *,
    prog: str,
    description: str,
) -> int:
    """Parse `argv` into `config_cls` and call `run(config, beam_args)`, which prints its own
    summary (ending with the run directory and the report); returns the exit code. On several JAX
    hosts the others leave here, process 0 once its flow's pretrain stage met them."""

    def run_cli(config: Any, beam_args: Sequence[str] | None = None) -> None:
        run(config, beam_args)

    with flow_defaults():
        code = stage_main(config_cls, run_cli, argv, prog=prog, description=description, beam=True)
    return leave_jax_cluster(code, process_0_met=True)
