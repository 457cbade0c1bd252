"""Distil a fine-tuned ALBERT into a smaller student on the teacher's task (`albert distill`).

    albert distill --teacher runs/sst2-large --student albert-tiny --task sst2 \
        --spm-model spiece.model --data-dir glue/SST-2 --output runs/sst2-distilled

The teacher is an `albert finetune` output (its task must be --task, its vocabulary the
student's --spm-model); the student a preset (randomly initialised) or a pretrained model. The
student trains with `albert finetune`'s flags and machinery (Table 14 defaults, dev evaluations,
early stopping, checkpoints, SIGTERM -> exit 75 and resume) on alpha * T^2 * KL(teacher's soft
targets at temperature T || student's) + (1 - alpha) * the task's loss on the labels, with
TinyBERT's hidden-state and attention matching inside alpha's share where --hidden-weight or
--attention-weight is above 0. The
teacher's outputs on the training set are computed once into OUTPUT.teacher-outputs/ (or
--teacher-cache), keyed by the teacher and the data. Writes what `albert finetune` writes
(results.json, the predictions, model.keras: the student) and distillation.md, the teacher and
the student side by side: dev score, parameters, FLOPs per token, CPU sequences/s at batch 1 and
32 (see docs/finetune.md).

The configuration is checked before Keras (and its backend) is imported.
"""

from __future__ import annotations

from albert.outputs import check_writable
from albert.stage import stage_main
from model.distill.checks import teacher_results
from model.distill.config import DistillConfig


def run(config: DistillConfig) -> dict:
    """`model.distill.stage.run`, imported once the config is valid, the teacher checked
    (`model.distill.checks`) and the output writable."""
    teacher_results(config)
    check_writable(config.output, "DistillConfig.output")
    from model.distill.stage import run as distill  # heavy: Keras and its backend

    return distill(config)


def main(argv=None, prog="python -m model.distill") -> int:
    return stage_main(DistillConfig, run, argv, prog=prog, description=__doc__)
