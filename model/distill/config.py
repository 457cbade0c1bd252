"""The distillation stage's config: `albert finetune`'s flags (task, data, steps, seed,
checkpointing) with the teacher, the student and the soft-target loss's settings."""

from __future__ import annotations

from typing import Any

from pydantic import Field, model_validator

from model.finetune.config import FinetuneConfig
from model.network.config import PRESETS

FINETUNE_ONLY = ("multitask", "further_pretrain_steps")
"""`albert finetune` flags distillation does not take (one phase: the task's)."""

MATCHING = ("hidden_weight", "attention_weight")
"""The intermediate losses' weights (`model.distill.matching`)."""


class DistillConfig(FinetuneConfig):
    """`albert distill`: `teacher` is an `albert finetune` output (results.json, model.keras);
    `student` a preset name (randomly initialised) or a pretrained export, which sets `init` and
    `preset` (`student_init`). The loss is Hinton et al.'s: alpha * (T^2 * KL(teacher's soft
    targets || student's) + the intermediate losses) + (1 - alpha) * the task's own loss on the
    labels; the intermediate losses (TinyBERT's, `model.distill.matching`) are off by default."""

    teacher: str = Field(description="fine-tuned teacher: an `albert finetune` output directory")
    student: str = Field(
        description="student: a preset (e.g. albert-nano, randomly initialised) or a pretrained "
        "model (.keras, Hugging Face dir, TF1 checkpoint)"
    )
    init: str = Field("", description="set by --student (not a flag of distill)")
    temperature: float = Field(2.0, gt=0, description="softmax temperature T of the soft targets")
    alpha: float = Field(
        0.5, ge=0, le=1, description="weight of the soft targets (1 - alpha: the labels')"
    )
    hidden_weight: float = Field(
        0.0,
        ge=0,
        description="weight of each hidden-state pair's mean squared error (TinyBERT's "
        "intermediate layers, a learned projection where the widths differ; the teacher then "
        "runs at every step); 0: none",
    )
    attention_weight: float = Field(
        0.0,
        ge=0,
        description="weight of each attention-score pair's mean squared error (TinyBERT's); "
        "0: none",
    )
    teacher_batch_size: int = Field(64, gt=0, description="batch size of the teacher's pass")
    shard_size: int = Field(
        1024, gt=0, description="examples per file of the teacher-outputs cache"
    )
    serving_iterations: int = Field(
        20,
        ge=0,
        description="timed inference calls per batch size (1 and 32) for the report's "
        "sequences/s of the teacher and the student; 0: not measured",
    )
    teacher_cache: str | None = Field(
        None,
        description="directory of the teacher-outputs cache (default: OUTPUT.teacher-outputs; "
        "kept after the run, keyed by the teacher and the training data)",
    )

    @model_validator(mode="before")
    @classmethod
    def _student_init(cls, values: Any) -> Any:
        if not isinstance(values, dict) or "student" not in values:
            return values
        for name in FINETUNE_ONLY:
            if values.get(name):
                flag = "--" + name.replace("_", "-")
                raise ValueError(f"{flag} is a flag of `albert finetune`, not of distill")
        init, preset = student_init(values["student"], values.get("preset", "albert-tiny"))
        if values.get("init") not in (None, "", init):
            raise ValueError("--init: the student is --student")
        return {**values, "init": init, "preset": preset}

    @model_validator(mode="after")
    def _matching_needs_soft_targets(self) -> DistillConfig:
        """The intermediate losses weigh inside alpha's share: with --alpha 0 they are refused
        (checked on the parsed values, so a value that is no number is the field's own error)."""
        if self.alpha == 0 and any(getattr(self, name) > 0 for name in MATCHING):
            raise ValueError(
                "--alpha 0 trains on the labels alone: --hidden-weight and --attention-weight "
                "weigh inside the distillation's share"
            )
        return self

    def cache_dir(self) -> str:
        return self.teacher_cache or self.output.rstrip("/") + ".teacher-outputs"


def student_init(student: str, preset: str) -> tuple[str, str]:
    """(init, preset) of `--student`: a preset name is a random init of it, anything else the
    pretrained model at that path."""
    return ("random", student) if student in PRESETS else (student, preset)
