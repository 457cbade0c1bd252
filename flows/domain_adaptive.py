"""Domain-adaptive pretraining as a Prefect flow: a base model + a new-domain corpus ->
segment -> tfrecords (the base vocabulary) -> held-out metrics of the base -> further pretraining -> held-out metrics again.

The base is an earlier run directory of flows.pretrain_pipeline (its pretrain/export/model.keras and
vocab/spiece.model) or an imported model (.keras, Hugging Face dir, TF1 checkpoint) with --spm-model.
Before/after figures are held-out in-domain masked-LM accuracy and perplexity (on whole documents
of the new corpus that further pretraining never sees: pipelines.tfrecords' held-out split). Stages are cached and retried as in flows.pretrain_pipeline. The deployment in
prefect.yaml runs this flow on a cron schedule (`albert deploy` applies it).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from prefect import flow
from pydantic import Field

import flows  # noqa: F401  (Prefect defaults before Prefect is imported)
from albert.config import ConfigError, JsonDict, StageConfig, build_config
from albert.fileio import exists, join
from albert.stage import stage_main
from flows import tasks
from flows.run_config import RunConfig, run_plan, stage_summary


class DomainAdaptiveConfig(RunConfig):
    """Parameters of the domain-adaptive flow; per-stage dicts set any other stage config field."""

    base: str = Field(description="earlier run directory, or a model (.keras / HF dir / TF1 checkpoint)")
    spm_model: str | None = Field(None, description="the base's SentencePiece model (default: BASE/vocab/spiece.model)")
    input: list[str] = Field(min_length=1, description="new-domain corpus files or globs (repeat the flag)")
    run_dir: str = Field("runs/domain-adaptive", description="run directory; one subdirectory per stage")
    steps: int = Field(200, gt=0, description="further pretraining steps")
    select: JsonDict | None = Field(
        None,
        description="optional domain-classifier data selection before tfrecords: DomainSelectConfig fields "
        "(target_samples + source_samples, or classifier; top_k or threshold)",
    )


def resolve_base(config: DomainAdaptiveConfig) -> tuple[str, str]:
    """(base model path, its SentencePiece model) from a run directory or a model + --spm-model."""
    run_model = join(config.base, "pretrain", "export", "model.keras")
    model = run_model if exists(run_model) else config.base
    spm = config.spm_model or join(config.base, "vocab", "spiece.model")
    if not exists(spm):
        raise ConfigError(f"DomainAdaptiveConfig.spm_model: {spm} does not exist (pass the base's --spm-model)")
    return model, spm


def stage_configs(config: DomainAdaptiveConfig) -> dict[str, StageConfig]:
    """The validated config of every stage (ConfigError names the stage's bad field)."""
    base_model, spm = resolve_base(config)
    configs: dict[str, StageConfig] = {"segment": config.segment_config(config.input)}
    corpus = config.stage_dir("segment")
    if config.select is not None:
        from pipelines.domain_select import DomainSelectConfig

        configs["select"] = build_config(DomainSelectConfig, {
            "input": corpus, "output": config.stage_dir("select"), "spm_model": spm, "seed": config.seed,
            **config.select})
        corpus = join(config.stage_dir("select"), "selected-*.txt")
    return configs | {
        "tfrecords": config.tfrecords_config(corpus, spm),
        "heldout-before": config.held_out_eval_config(base_model, "heldout-before"),
        "pretrain": config.pretrain_config(spm, init=base_model),
        "heldout-after": config.held_out_eval_config(config.trained_model(), "heldout-after"),
    }


@flow(name="albert-domain-adaptive", log_prints=True)
def domain_adaptive(config: DomainAdaptiveConfig, beam_args: list[str] | None = None) -> dict[str, Any]:
    """segment -> [select] -> tfrecords -> heldout (base) -> pretrain -> heldout (adapted), then the report."""
    from flows.report import (
        Section,
        TrainingProgress,
        publish_report,
        with_sop_labels,
        write_report,
    )

    configs = stage_configs(config)
    beam = {"beam_args": list(beam_args or [])}
    selection = [(tasks.domain_select, "select", "selection.json", beam)] if "select" in configs else []
    plan = [
        (tasks.segment, "segment", "stats.json", beam),
        *selection,
        (tasks.tfrecords, "tfrecords", "metadata.json", beam),
        (tasks.heldout.with_options(name="heldout-before"), "heldout-before", "metrics.json", {}),
        (tasks.pretrain, "pretrain", join("export", "model.keras"),
         {"on_metrics": TrainingProgress("albert-domain-adaptive", configs["pretrain"].steps)}),
        (tasks.heldout.with_options(name="heldout-after"), "heldout-after", "metrics.json", {}),
    ]
    outcomes = run_plan(plan, configs, config.result_storage())
    evaluation = {"base": outcomes["heldout-before"].result, "adapted": outcomes["heldout-after"].result}
    report = None
    if "://" not in config.run_dir:
        sections = [Section("Corpus statistics", outcomes["segment"].result),
                    *([Section("Domain-classifier selection", outcomes["select"].result)] if selection else []),
                    Section("Instance statistics", with_sop_labels(outcomes["tfrecords"].result))]
        report, markdown = write_report(config.run_dir, "ALBERT domain-adaptive pretraining", sections,
                                        metrics_file=Path(config.run_dir, "pretrain", "metrics.jsonl"),
                                        evaluation=evaluation)
        publish_report("albert-domain-adaptive", markdown, evaluation)
    return {"run_dir": config.run_dir, "report": str(report) if report else None, "evaluation": evaluation,
            "stages": stage_summary(outcomes)}


def run(config: DomainAdaptiveConfig, beam_args: Sequence[str] | None = None) -> dict[str, Any]:
    stage_configs(config)  # bad values fail here, before Prefect starts
    return domain_adaptive(config, list(beam_args or []))


def main(argv: Sequence[str] | None = None, prog: str = "python -m flows.domain_adaptive") -> int:
    return stage_main(DomainAdaptiveConfig, run, argv, prog=prog, description=__doc__, beam=True)


if __name__ == "__main__":
    sys.exit(main())
