"""The parameters of the domain-adaptive flow (`python -m flows.domain_adaptive`), shared by its two
modes: one adaptation of a base (`--base`, flows.domain_adaptive) and a night of a model line
(`--line`, flows.line_night), and the data stages' configs both build.

The line's defaults come from measurements (docs/measurements.md, "A model line night after
night"): the replay shares, the gate's margin and tolerance.
"""

from __future__ import annotations

from pydantic import Field, model_validator

from albert.config import ConfigError, JsonDict, StageConfig, build_config
from albert.fs import exists, join
from flows.run_config import RunConfig

DOMAIN_REPLAY = 0.1
GENERAL_REPLAY = 0.4
MIN_IMPROVEMENT = 0.02
MAX_FORGETTING = 0.05
ONE_OFF_STEPS = 200


class DomainAdaptiveConfig(RunConfig):
    """Parameters of the domain-adaptive flow; per-stage dicts set any other stage config field."""

    base: str | None = Field(
        None,
        description="earlier run directory, or a model (.keras / HF dir / TF1 checkpoint); with "
        "--line: what a new line starts from (its v0001)",
    )
    spm_model: str | None = Field(
        None, description="the base's SentencePiece model (default: BASE/vocab/spiece.model)"
    )
    input: list[str] = Field(
        min_length=1, description="new-domain corpus files or globs (repeat the flag)"
    )
    run_dir: str = Field(
        "runs/domain-adaptive",
        description="run directory of one adaptation (--base without --line); one subdirectory "
        "per stage",
    )
    steps: int | None = Field(
        None,
        gt=0,
        description=f"further pretraining steps (default: {ONE_OFF_STEPS}; with --line: --epochs "
        "passes over the night's data, so a night costs what is new)",
    )
    select: JsonDict | None = Field(
        None,
        description="optional domain-classifier data selection before tfrecords: "
        "DomainSelectConfig fields "
        "(target_samples + source_samples, or classifier; top_k or threshold)",
    )
    line: str | None = Field(
        None,
        description="a model line (local or gs://): continue from its current version on the "
        "documents new since it, score, promote or refuse, keep the night as a new version",
    )
    general_data: str | None = Field(
        None,
        description="--line with --base: the base's general TFRecords (held-out set and replay; "
        "default: BASE/tfrecords)",
    )
    epochs: float = Field(
        1.0, gt=0, description="--line: passes over the night's data when --steps is not given"
    )
    domain_replay: float = Field(
        DOMAIN_REPLAY,
        ge=0,
        lt=1,
        description="--line: share of the night's training sequences replayed from earlier nights",
    )
    general_replay: float = Field(
        GENERAL_REPLAY,
        ge=0,
        lt=1,
        description="--line: share of the night's training sequences from the base's general data",
    )
    min_improvement: float = Field(
        MIN_IMPROVEMENT,
        description="--line: promote only if in-domain held-out masked-LM loss falls by this much",
    )
    max_forgetting: float = Field(
        MAX_FORGETTING,
        description="--line: and general held-out masked-LM loss rises by at most this much",
    )
    retry_refused: bool = Field(
        False, description="--line: count the files of refused nights as new again"
    )

    @model_validator(mode="after")
    def _base_or_line(self):
        if self.base is None and self.line is None:
            raise ValueError("give --base (one adaptation) or --line (a model line)")
        if self.domain_replay + self.general_replay >= 1:
            raise ValueError("--domain-replay + --general-replay must be below 1")
        return self

    def one_off_steps(self) -> int:
        return self.steps or ONE_OFF_STEPS


def resolve_base(config: DomainAdaptiveConfig) -> tuple[str, str]:
    """(base model path, its SentencePiece model) from a run directory or a model + --spm-model."""
    if config.base is None:
        raise ConfigError("DomainAdaptiveConfig.base: needed to start a new line")
    run_model = join(config.base, "pretrain", "export", "model.keras")
    model = run_model if exists(run_model) else config.base
    spm = config.spm_model or join(config.base, "vocab", "spiece.model")
    if not exists(spm):
        raise ConfigError(
            f"DomainAdaptiveConfig.spm_model: {spm} does not exist (pass the base's --spm-model)"
        )
    return model, spm


def data_configs(
    config: DomainAdaptiveConfig, inputs: list[str], spm: str
) -> dict[str, StageConfig]:
    """segment -> [select] -> tfrecords with the vocabulary `spm`, under config.run_dir."""
    configs: dict[str, StageConfig] = {"segment": config.segment_config(inputs)}
    corpus = config.stage_dir("segment")
    if config.select is not None:
        from pipelines.domain_select import DomainSelectConfig  # heavy: loads Beam

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
