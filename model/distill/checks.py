"""The checks of `--teacher` that need no Keras, run before Keras loads: an `albert finetune`
output, fine-tuned on `--task`, with the student's SentencePiece model."""

from __future__ import annotations

import json

from albert.errors import StageError, naming
from albert.fs import exists, file_digest, join, open_file
from model.distill.config import DistillConfig
from model.finetune.config import task_of


def teacher_results(config: DistillConfig) -> dict:
    """The teacher's results.json, after the checks that refuse it (a StageError naming --teacher
    or --spm-model): not an `albert finetune` output, fine-tuned on another task, or of another
    SentencePiece model than the student's --spm-model."""
    path = join(config.teacher, "results.json")
    if not exists(path) or not exists(join(config.teacher, "model.keras")):
        raise StageError(
            f"--teacher {config.teacher}: not an `albert finetune` output (results.json and "
            "model.keras)"
        )
    with naming(path), open_file(path, "r") as handle:
        results = json.load(handle)
    task = task_of(config).name
    if results.get("task") != task:
        raise StageError(
            f"--teacher {config.teacher}: fine-tuned on {results.get('task')}, not on --task {task}"
        )
    teacher_spm = (results.get("config") or {}).get("spm_model")
    if (
        teacher_spm
        and exists(teacher_spm)
        and file_digest(teacher_spm) != file_digest(config.spm_model)
    ):
        raise StageError(
            f"--spm-model {config.spm_model}: the student's vocabulary differs from the "
            f"teacher's ({teacher_spm})"
        )
    return results
