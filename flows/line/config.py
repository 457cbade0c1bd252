"""The parameters of a model line's night (`python -m flows.line.flow`, flows.line.night): the
line, the data it reads (flows.domain_config), how long a night trains, the replay shares and the
gate.

The defaults come from measurements (docs/measurements.md, "A model line night after night"): the
replay shares, the gate's margin and tolerance.
"""

from __future__ import annotations

from pydantic import Field, model_validator

from flows.domain_config import DomainDataConfig

DOMAIN_REPLAY = 0.1
GENERAL_REPLAY = 0.4
MIN_IMPROVEMENT = 0.02
MAX_FORGETTING = 0.05


class LineConfig(DomainDataConfig):
    """Parameters of a night of a model line; per-stage dicts set any other stage config field."""

    line: str = Field(
        description="a model line (local or gs://): continue from its current version on the "
        "documents new since it, score, promote or refuse, keep the night as a new version",
    )
    base: str | None = Field(
        None,
        description="what a new line starts from (its v0001): an earlier run directory, or a "
        "model (.keras / HF dir / TF1 checkpoint)",
    )
    run_dir: str = Field(
        "", description="set by each night: LINE/nights/<parent>-<digest of its files>"
    )
    general_data: str | None = Field(
        None,
        description="with --base: the base's general TFRecords (held-out set and replay; "
        "default: BASE/tfrecords)",
    )
    steps: int | None = Field(
        None,
        gt=0,
        description="further pretraining steps (default: --epochs passes over the night's data, "
        "so a night costs what is new)",
    )
    epochs: float = Field(1.0, gt=0, description="passes over the night's data without --steps")
    domain_replay: float = Field(
        DOMAIN_REPLAY,
        ge=0,
        lt=1,
        description="share of the night's training sequences replayed from earlier nights",
    )
    general_replay: float = Field(
        GENERAL_REPLAY,
        ge=0,
        lt=1,
        description="share of the night's training sequences from the base's general data",
    )
    min_improvement: float = Field(
        MIN_IMPROVEMENT,
        description="promote only if in-domain held-out masked-LM loss falls by this much",
    )
    max_forgetting: float = Field(
        MAX_FORGETTING,
        description="and general held-out masked-LM loss rises by at most this much",
    )
    retry_refused: bool = Field(False, description="count the files of refused nights as new again")

    @model_validator(mode="after")
    def _shares(self):
        if self.domain_replay + self.general_replay >= 1:
            raise ValueError("--domain-replay + --general-replay must be below 1")
        return self
