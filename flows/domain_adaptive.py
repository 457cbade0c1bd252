"""Domain-adaptive pretraining as a Prefect flow: a base model + a new-domain corpus ->
segment -> tfrecords (the base vocabulary) -> evaluate the base -> further pretraining -> evaluate.

The base is an earlier run directory of flows.pretrain_pipeline (its pretrain/export/model.keras and
vocab/spiece.model) or an imported model (.keras, Hugging Face dir, TF1 checkpoint) with --spm-model.
Before/after figures are held-out in-domain masked-LM accuracy and perplexity (the last TFRecord
shard is held out). Stages are cached and retried as in flows.pretrain_pipeline. The deployment in
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
from albert.config import ConfigError, StageConfig, build_config
from albert.fileio import exists, join
from albert.stage import stage_main
from flows import tasks
from flows.tasks import JsonDict


class DomainAdaptiveConfig(StageConfig):
    """Parameters of the domain-adaptive flow; per-stage dicts set any other stage config field."""

    base: str = Field(description="earlier run directory, or a model (.keras / HF dir / TF1 checkpoint)")
    spm_model: str | None = Field(None, description="the base's SentencePiece model (default: BASE/vocab/spiece.model)")
    input: list[str] = Field(min_length=1, description="new-domain corpus files or globs (repeat the flag)")
    run_dir: str = Field("runs/domain-adaptive", description="run directory; one subdirectory per stage")
    results: str | None = Field(None, description="Prefect result/cache storage (default: RUN_DIR/.prefect)")
    preset: str = Field("albert-tiny", description="the base model's preset (model.config.get_preset)")
    max_seq_length: int = Field(128, gt=8, description="tokens per instance")
    num_shards: int = Field(8, gt=1, description="TFRecord shards (the last one is the held-out set)")
    dupe_factor: int = Field(2, gt=0, description="times each document is masked differently")
    seed: int = Field(12345, description="seed of every random choice in the run")
    steps: int = Field(200, gt=0, description="further pretraining steps")
    batch_size: int = Field(32, gt=0, description="batch size")
    learning_rate: float | None = Field(None, gt=0, description="peak learning rate (default: the stage's)")
    eval_batches: int | None = Field(50, gt=0, description="held-out batches to score")
    segment: JsonDict = Field(default_factory=dict, description="other SegmentConfig fields")
    tfrecords: JsonDict = Field(default_factory=dict, description="other TFRecordsConfig fields")
    pretrain: JsonDict = Field(default_factory=dict, description="other PretrainConfig fields")
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
    from model.pretrain import PretrainConfig
    from pipelines.segment import SegmentConfig
    from pipelines.tfrecords import TFRecordsConfig

    base_model, spm = resolve_base(config)
    segment_dir, tfrecords_dir = join(config.run_dir, "segment"), join(config.run_dir, "tfrecords")
    pretrain_dir = join(config.run_dir, "pretrain")
    pretrain_values: dict[str, Any] = {
        "data": tfrecords_dir, "preset": config.preset, "output": pretrain_dir, "init": base_model,
        "spm_model": spm, "steps": config.steps, "batch_size": config.batch_size, "seed": config.seed,
        "warmup_steps": config.steps // 10, "log_every": max(1, config.steps // 50), "eval_every": 0,
        "eval_batches": config.eval_batches or 20,
    }
    if config.learning_rate is not None:
        pretrain_values["learning_rate"] = config.learning_rate

    def evaluation(model: str, name: str) -> StageConfig:
        return build_config(tasks.HeldOutEvalConfig, {
            "model": model, "data": tfrecords_dir, "output": join(config.run_dir, name),
            "batch_size": config.batch_size, "max_batches": config.eval_batches})

    configs: dict[str, StageConfig] = {
        "segment": build_config(SegmentConfig, {"input": config.input, "output": segment_dir, **config.segment}),
    }
    corpus = segment_dir
    if config.select is not None:
        from pipelines.domain_select import DomainSelectConfig

        select_dir = join(config.run_dir, "select")
        configs["select"] = build_config(DomainSelectConfig, {
            "input": segment_dir, "output": select_dir, "spm_model": spm, "seed": config.seed,
            **config.select})
        corpus = join(select_dir, "selected-*.txt")
    return configs | {
        "tfrecords": build_config(TFRecordsConfig, {
            "input": corpus, "spm_model": spm, "output": tfrecords_dir, "max_seq_length": config.max_seq_length,
            "dupe_factor": config.dupe_factor, "seed": config.seed, "num_shards": config.num_shards,
            **config.tfrecords}),
        "evaluate-before": evaluation(base_model, "evaluate-before"),
        "pretrain": build_config(PretrainConfig, {**pretrain_values, **config.pretrain}),
        "evaluate-after": evaluation(join(pretrain_dir, "export", "model.keras"), "evaluate-after"),
    }


@flow(name="albert-domain-adaptive", log_prints=True)
def domain_adaptive(config: DomainAdaptiveConfig, beam_args: list[str] | None = None) -> dict[str, Any]:
    """segment -> [select] -> tfrecords -> evaluate (base) -> pretrain -> evaluate (adapted), then the report."""
    from flows.report import (
        Section,
        TrainingProgress,
        publish_report,
        with_sop_labels,
        write_report,
    )

    configs = stage_configs(config)
    storage = tasks.result_storage_for(config.results or join(config.run_dir, ".prefect"))
    beam = {"beam_args": list(beam_args or [])}
    selection = [(tasks.domain_select, "select", "selection.json", beam)] if "select" in configs else []
    plan = [
        (tasks.segment, "segment", "stats.json", beam),
        *selection,
        (tasks.tfrecords, "tfrecords", "metadata.json", beam),
        (tasks.evaluate.with_options(name="evaluate-before"), "evaluate-before", "metrics.json", {}),
        (tasks.pretrain, "pretrain", join("export", "model.keras"),
         {"on_metrics": TrainingProgress("albert-domain-adaptive", configs["pretrain"].steps)}),
        (tasks.evaluate.with_options(name="evaluate-after"), "evaluate-after", "metrics.json", {}),
    ]
    outcomes = {}
    for index, (stage, name, marker, kwargs) in enumerate(plan, start=1):
        outcomes[name] = tasks.run_stage(
            stage, configs[name], index=index, total=len(plan),
            output_marker=join(configs[name].output, marker), result_storage=storage, **kwargs)
    evaluation = {"base": outcomes["evaluate-before"].result, "adapted": outcomes["evaluate-after"].result}
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
            "stages": {name: {"cached": o.cached, "seconds": round(o.seconds, 2)} for name, o in outcomes.items()}}


def run(config: DomainAdaptiveConfig, beam_args: Sequence[str] | None = None) -> dict[str, Any]:
    stage_configs(config)  # bad values fail here, before Prefect starts
    return domain_adaptive(config, list(beam_args or []))


def main(argv: Sequence[str] | None = None, prog: str = "python -m flows.domain_adaptive") -> int:
    return stage_main(DomainAdaptiveConfig, run, argv, prog=prog, description=__doc__, beam=True)


if __name__ == "__main__":
    sys.exit(main())
