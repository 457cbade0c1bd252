"""The parameters of a model line's night (`python -m flows.line.flow`, flows.line.night): the
line, the data it reads (flows.domain_config), how long a night trains, the replay shares and the
gate.

The defaults come from measurements (docs/measurements.md, "A model line night after night"): the
replay shares, the gate's margin and tolerance.
"""

from __future__ import annotations

from pydantic import Field, model_validator

from albert.config import JsonDict
from flows.domain_config import DomainDataConfig
from flows.line.gate import TaskGate
from model.finetune.config import parse_task_dir

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
    gate_task: str | None = Field(
        None,
        description="TASK=DIR: the gate also fine-tunes the candidate and its parent alike on this "
        "task (a registered one and its directory, or your own task's directory with its "
        "task.yaml) and refuses a night that makes its dev metric worse",
    )
    gate_metric: str | None = Field(
        None,
        description="the gate task's dev metric compared (default: its primary metric, e.g. "
        "accuracy; a user's classification task: accuracy or macro_f1)",
    )
    gate_tolerance: float = Field(
        0.0, ge=0, description="how much worse the candidate may be on the gate task's metric"
    )
    gate_finetune: JsonDict = Field(
        default_factory=dict,
        description='FinetuneConfig fields of the gate\'s two fine-tunes, e.g. {"train_steps": '
        '300, "max_seq_length": 128} (default: the task\'s)',
    )
    retry_refused: bool = Field(False, description="count the files of refused nights as new again")

    @model_validator(mode="after")
    def _shares(self):
        if self.domain_replay + self.general_replay >= 1:
            raise ValueError("--domain-replay + --general-replay must be below 1")
        return self

    @model_validator(mode="after")
    def _gate_task(self):
        if self.gate_task is not None:
            parse_task_dir(self.gate_task, "--gate-task")
        elif self.gate_metric is not None or self.gate_finetune:
            raise ValueError("--gate-metric and --gate-finetune need --gate-task TASK=DIR")
        return self

    def task_gate(self, primary_metric: str) -> TaskGate | None:
        """The gate's task (`flows.line.gate.TaskGate`): its name, the metric (default:
        `primary_metric`, the task's own, as its fine-tune's results.json names it) and the
        tolerance; None without one."""
        if self.gate_task is None:
            return None
        task, _ = parse_task_dir(self.gate_task, "--gate-task")
        return TaskGate(task, self.gate_metric or primary_metric, self.gate_tolerance)
