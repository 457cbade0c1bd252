"""`albert ablate`: the paper's ablation tables (Lan et al. 2020, Tables 3-5) from one command, as a
Prefect flow.

segment and vocab run once; tfrecords once per objective (`tfrecords-sop`, `tfrecords-nsp`: the same
documents, seed and shard split, so the same held-out documents); then one pretraining run per grid
cell and seed (`cells/<cell>/pretrain`), each a cached, resumable `pretrain` task as in
flows.pipeline.flow, one at a time in this process (Keras and TensorFlow state is per process);
then every trained model is scored on three held-out sets: masked-LM (on the SOP data), SOP pairs
and NSP pairs, so each model is also scored on the objective it was not trained on (Table 5). The
run ends with RUN_DIR/ablation.md, ablation.csv and plots (flows.ablation.report).

The grid varies one axis at a time from the baseline (the first value of each axis), as the paper's
tables do: `--objective sop,nsp --sharing all,ffn` trains sop/all (the baseline), nsp/all and
sop/ffn, each with `--seeds` seeds. `--token-objective mlm,rtd` adds the replaced-token detection
cell (`PretrainConfig.objective`, ELECTRA). Adding a value to an axis trains only the new cells;
every other cell comes from Prefect's cache. `--parallel N` trains N cells at once, each in its
own process (Prefect's ProcessPoolTaskRunner); on a cluster, run the flow on a work pool with one
GPU per worker."""

from __future__ import annotations

import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

from prefect import flow
from prefect.task_runners import ProcessPoolTaskRunner, ThreadPoolTaskRunner
from pydantic import Field, field_validator

from albert.config import CommaList, StageConfig, build_config
from albert.fs import exists, join
from albert.stage import stage_main
from flows.ablation.report import cell_record, write_ablation_report
from flows.engine import tasks
from flows.engine.prefect_settings import flow_defaults
from flows.pipeline.config import PretrainPipelineConfig
from flows.pipeline.flow import stage_configs
from flows.run_plan import run_plan
from flows.run_summary import stage_summary
from model.evaluation.heldout_stage import HeldOutEvalConfig

OBJECTIVES = ("sop", "nsp")
EVAL_SETS = {"sop": "tfrecords-sop", "nsp": "tfrecords-nsp"}


class AblationConfig(PretrainPipelineConfig):
    """The ablation grid over a shared corpus, vocabulary and pretraining budget."""

    run_dir: str = Field(
        "runs/ablation", description="run directory; one subdirectory per stage and cell"
    )
    objective: Annotated[list[Literal["sop", "nsp"]], CommaList] = Field(
        default_factory=lambda: ["sop", "nsp"],
        min_length=1,
        description="pretraining objectives (comma-separated; the first is the baseline)",
    )
    token_objective: Annotated[list[Literal["mlm", "rtd"]], CommaList] = Field(
        default_factory=lambda: ["mlm"],
        min_length=1,
        description="token objectives (comma-separated; the first is the baseline): mlm = "
        "masked-LM, rtd = ELECTRA's replaced-token detection (model.pretrain --objective)",
    )
    sharing: Annotated[list[Literal["all", "attention", "ffn", "none"]], CommaList] = Field(
        default_factory=lambda: ["all"],
        min_length=1,
        description="cross-layer sharing modes (comma-separated; the first is the baseline)",
    )
    embedding_size: Annotated[list[int], CommaList] = Field(
        default_factory=list,
        description="embedding sizes E (comma-separated; default: the preset's)",
    )
    seeds: int = Field(1, gt=0, description="seeds per cell: --seed, --seed + 1, ...")
    parallel: int = Field(
        1,
        gt=0,
        description="cells trained at once, each in its own process (`albert ablate`; a run of "
        "the ablation-grid deployment trains them one at a time)",
    )

    @field_validator("objective", "token_objective", "sharing", "embedding_size")
    @classmethod
    def _distinct(cls, values: list) -> list:
        if len(set(values)) != len(values):
            raise ValueError(f"values repeat: {values}")
        if any(isinstance(v, int) and v <= 0 for v in values):
            raise ValueError(f"embedding sizes must be positive: {values}")
        return values


@dataclass(frozen=True)
class Cell:
    """One pretraining run of the grid: a variant of the baseline and a seed."""

    objective: str
    sharing: str
    embedding_size: int | None
    seed: int
    token_objective: str = "mlm"

    @property
    def variant(self) -> str:
        size = f"E={self.embedding_size}" if self.embedding_size else "E=preset"
        rtd = " · rtd" if self.token_objective == "rtd" else ""
        return f"{self.objective}{rtd} · {self.sharing} · {size}"

    @property
    def name(self) -> str:
        """The cell's directory: a masked-LM cell's name is the one it had before the token axis."""
        rtd = "-rtd" if self.token_objective == "rtd" else ""
        size = self.embedding_size or "preset"
        return f"{self.objective}{rtd}-{self.sharing}-e{size}-seed{self.seed}"

    def architecture(self) -> dict[str, Any]:
        overrides: dict[str, Any] = {"sharing": self.sharing}
        if self.embedding_size:
            overrides["embedding_size"] = self.embedding_size
        return overrides


def grid(config: AblationConfig) -> list[Cell]:
    """The baseline, then each other value of each axis with the rest at the baseline; x seeds."""
    sizes = config.embedding_size or [None]
    base = (config.objective[0], config.sharing[0], sizes[0], config.token_objective[0])
    variants = [base]
    variants += [(objective, *base[1:]) for objective in config.objective[1:]]
    variants += [(*base[:3], token) for token in config.token_objective[1:]]
    variants += [(base[0], sharing, *base[2:]) for sharing in config.sharing[1:]]
    variants += [(*base[:2], size, base[3]) for size in sizes[1:]]
    return [
        Cell(*variant[:3], seed=config.seed + i, token_objective=variant[3])
        for variant in variants
        for i in range(config.seeds)
    ]


def cell_dir(config: AblationConfig, cell: Cell) -> str:
    return join(config.run_dir, "cells", cell.name)


def data_configs(config: AblationConfig) -> dict[str, StageConfig]:
    """segment, vocab and one tfrecords config per objective (validated)."""
    base = stage_configs(config)
    configs = {"segment": base["segment"], "vocab": base["vocab"]}
    for objective in OBJECTIVES:
        values = {
            **base["tfrecords"].model_dump(),
            "objective": objective,
            "output": config.stage_dir(EVAL_SETS[objective]),
        }
        configs[EVAL_SETS[objective]] = build_config(type(base["tfrecords"]), values)
    return configs


def cell_configs(config: AblationConfig, cell: Cell) -> dict[str, StageConfig]:
    """The cell's pretraining config and its held-out evaluations on the SOP and NSP data."""
    spm_model = join(config.stage_dir("vocab"), "spiece.model")
    output = join(cell_dir(config, cell), "pretrain")
    configs = {
        "pretrain": config.pretrain_config(
            spm_model,
            data=config.stage_dir(EVAL_SETS[cell.objective]),
            output=output,
            seed=cell.seed,
            architecture=cell.architecture(),
            objective=cell.token_objective,
        )
    }
    model = join(output, "export", "model.keras")
    for objective, data in EVAL_SETS.items():
        configs[f"heldout-{objective}"] = build_config(
            HeldOutEvalConfig,
            {
                "model": model,
                "data": config.stage_dir(data),
                "output": join(cell_dir(config, cell), f"heldout-{objective}"),
                "batch_size": config.batch_size,
                "max_batches": config.eval_batches,
            },
        )
    return configs


def train_cells(
    cells: list[Cell], configs: dict[str, dict[str, StageConfig]], result_storage: Any
) -> dict[str, tasks.StageOutcome]:
    """Submit every cell's pretraining task (run by the flow's task runner), then wait for all."""
    submitted = {}
    for cell in cells:
        pretrain = configs[cell.name]["pretrain"]
        refresh = not exists(tasks.output_marker(tasks.pretrain, pretrain))
        task = tasks.pretrain.with_options(
            task_run_name=f"pretrain-{cell.name}",
            result_storage=result_storage,
            refresh_cache=refresh or None,
        )
        print(f"==> pretrain {cell.name}", flush=True)
        submitted[cell.name] = (task.submit(pretrain), time.monotonic())
    outcomes = {}
    for name, (future, start) in submitted.items():
        future.wait()
        state = future.state
        result = state.result()  # raises the cell's error: a failed cell fails the flow
        outcomes[name] = tasks.StageOutcome(
            "pretrain", dict(result or {}), state.name == "Cached", time.monotonic() - start
        )
        print(f"<== pretrain {name}: {'cached' if outcomes[name].cached else 'done'}", flush=True)
    return outcomes


@flow(name="albert-ablation", log_prints=True, task_runner=ThreadPoolTaskRunner(max_workers=1))
def ablation(config: AblationConfig, beam_args: list[str] | None = None) -> dict[str, Any]:
    """Data once, pretraining per cell, three held-out scores per model; returns the summary.

    Args:
        config: the grid (`albert ablate`'s flags): objectives, sharing modes and embedding sizes
            over one corpus, vocabulary and budget (cells one at a time; --parallel applies to
            `albert ablate`)
        beam_args: Apache Beam pipeline options for the Beam stages, e.g. `--runner=DataflowRunner`,
            `--project=P`, `--region=R`, `--temp_location=gs://B/tmp` (default: none, Beam's
            in-process FnApiRunner)
    """

    storage = config.result_storage()
    beam = {"beam_args": list(beam_args or [])}
    data = data_configs(config)
    data_plan = [
        (tasks.segment, "segment", beam),
        (tasks.vocab, "vocab", beam),
    ]
    data_plan += [
        (tasks.tfrecords.with_options(task_run_name=name), name, beam)
        for name in EVAL_SETS.values()
    ]
    outcomes = run_plan(data_plan, data, storage)

    cells = grid(config)
    configs = {cell.name: cell_configs(config, cell) for cell in cells}
    trained = train_cells(cells, configs, storage)
    vocab_size = outcomes[EVAL_SETS["sop"]].result["vocab_size"]
    records = []
    for cell in cells:
        evaluations = run_plan(
            [
                (
                    tasks.heldout.with_options(task_run_name=f"{name}-{cell.name}"),
                    name,
                    {},
                )
                for name in ("heldout-sop", "heldout-nsp")
            ],
            configs[cell.name],
            storage,
        )
        records.append(
            cell_record(
                cell, configs[cell.name]["pretrain"], vocab_size, trained[cell.name], evaluations
            )
        )
    report = write_ablation_report(config, records)
    return {
        "run_dir": config.run_dir,
        "report": str(report["markdown"]) if report else None,
        "cells": records,
        "stages": {
            **stage_summary(outcomes),
            **{
                f"pretrain-{k}": {"cached": o.cached, "seconds": round(o.seconds, 2)}
                for k, o in trained.items()
            },
        },
    }


def run(config: AblationConfig, beam_args: Sequence[str] | None = None) -> dict[str, Any]:
    """Validate the grid's configs, run the flow (cells in parallel processes with --parallel >
    1)."""
    data_configs(config)
    for cell in grid(config):
        cell_configs(config, cell)  # bad values fail here, before Prefect starts
    flow_run = ablation
    if config.parallel > 1:
        flow_run = ablation.with_options(
            task_runner=ProcessPoolTaskRunner(max_workers=config.parallel)
        )
    summary = flow_run(config, list(beam_args or []))
    print(
        "run directory: "
        f"{Path(config.run_dir).resolve() if '://' not in config.run_dir else config.run_dir}"
    )
    print(f"ablation tables: {summary['report']}")
    return summary


def _run_cli(config: AblationConfig, beam_args: Sequence[str] | None = None) -> None:
    run(config, beam_args)


def main(argv: Sequence[str] | None = None, prog: str = "python -m flows.ablation.flow") -> int:
    with flow_defaults():
        return stage_main(AblationConfig, _run_cli, argv, prog=prog, description=__doc__, beam=True)


if __name__ == "__main__":
    sys.exit(main())
