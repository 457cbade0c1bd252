"""The parameters of the domain-adaptive flow (`python -m flows.domain.flow`), what it shares
with a model line's night (flows.line.config), and the data stages' configs both build."""

from __future__ import annotations

from pydantic import Field

from albert.config import ConfigError, JsonDict, StageConfig, build_config
from albert.fs import exists, join
from flows.run_config import RunConfig

ONE_OFF_STEPS = 200


class DomainDataConfig(RunConfig):
    """What both domain flows read: a base and its vocabulary, the new-domain corpus, an optional
    data selection; per-stage dicts set any other stage config field."""

    base: str | None = Field(
        None, description="earlier run directory, or a model (.keras / HF dir / TF1 checkpoint)"
    )
    spm_model: str | None = Field(
        None, description="the base's SentencePiece model (default: BASE/vocab/spiece.model)"
    )
    input: list[str] = Field(
        min_length=1, description="new-domain corpus files or globs (repeat the flag)"
    )
    select: JsonDict | None = Field(
        None,
        description="optional domain-classifier data selection before tfrecords: "
        "DomainSelectConfig fields "
        "(target_samples + source_samples, or classifier; top_k or threshold)",
    )


class DomainAdaptiveConfig(DomainDataConfig):
    """Parameters of one adaptation of a base (flows.domain.flow)."""

    base: str = Field(
        description="earlier run directory, or a model (.keras / HF dir / TF1 checkpoint)"
    )
    run_dir: str = Field(
        "runs/domain-adaptive", description="run directory; one subdirectory per stage"
    )
    steps: int = Field(ONE_OFF_STEPS, gt=0, description="further pretraining steps")


def resolve_base(config: DomainDataConfig) -> tuple[str, str]:
    """(base model path, its SentencePiece model) from a run directory or a model + --spm-model."""
    name = type(config).__name__
    if config.base is None:
        raise ConfigError(f"{name}.base: needed to start a new line")
    run_model = join(config.base, "pretrain", "export", "model.keras")
    model = run_model if exists(run_model) else config.base
    spm = config.spm_model or join(config.base, "vocab", "spiece.model")
    if not exists(spm):
        raise ConfigError(f"{name}.spm_model: {spm} does not exist (pass the base's --spm-model)")
    return model, spm


def data_configs(config: DomainDataConfig, inputs: list[str], spm: str) -> dict[str, StageConfig]:
    """segment -> [select] -> tfrecords with the vocabulary `spm`, under config.run_dir."""
    configs: dict[str, StageConfig] = {"segment": config.segment_config(inputs)}
    corpus = config.stage_dir("segment")
    if config.select is not None:
        from pipelines.select.stage import DomainSelectConfig  # heavy: loads Beam

        configs["select"] = build_config(
            DomainSelectConfig,
            {
                "input": corpus,
                "output": config.stage_dir("select"),
                "spm_model": spm,
                "seed": config.seed,
                **config.select,
            },
        )
        corpus = join(config.stage_dir("select"), "selected-*.txt")
    return configs | {"tfrecords": config.tfrecords_config(corpus, spm)}
