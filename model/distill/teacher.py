"""The teacher: an `albert finetune` output checked against the distillation's task and
vocabulary, and its outputs on the training examples, written once to the teacher-outputs cache
(`model.distill.cache`)."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator

import keras
import numpy as np

from albert.errors import StageError, naming
from albert.fs import exists, join, open_file
from model.distill.cache import TeacherOutputs, cache_key, file_digest, find_cache, write_cache
from model.distill.config import DistillConfig
from model.finetune.kind import TaskData, inputs_of
from model.tasks import get_task

logger = logging.getLogger(__name__)


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
    task = get_task(config.task).name
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


def load_teacher(config: DistillConfig, vocab_size: int) -> keras.Model:
    """The teacher's fine-tuned model; a vocabulary of another size than `vocab_size` (the
    student's) is a StageError naming --teacher."""
    path = join(config.teacher, "model.keras")
    with naming(path):
        model = keras.saving.load_model(path, compile=False)
    pieces = model.backbone.config.vocab_size
    if pieces != vocab_size:
        raise StageError(
            f"--teacher {config.teacher}: a vocabulary of {pieces} pieces, the student's "
            f"(--spm-model {config.spm_model}) has {vocab_size}"
        )
    return model


def output_shards(
    teacher: keras.Model, inputs: dict[str, np.ndarray], batch_size: int, shard_size: int
) -> Iterator[dict[str, np.ndarray]]:
    """The teacher's outputs on `inputs`, `shard_size` examples at a time: `{"logits": ...}`, or
    SQuAD's `{"start_logits", "end_logits"}`, float32."""
    count = len(inputs["input_ids"])
    for start in range(0, count, shard_size):
        chunk = {name: values[start : start + shard_size] for name, values in inputs.items()}
        outputs = teacher.predict(chunk, batch_size=batch_size, verbose=0)
        named = outputs if isinstance(outputs, dict) else {"logits": outputs}
        yield {name: np.asarray(values, np.float32) for name, values in named.items()}


def teacher_outputs(config: DistillConfig, teacher: keras.Model, data: TaskData) -> TeacherOutputs:
    """The cache of the teacher's outputs on `data`'s training examples: found under its key, or
    computed now (module docstring)."""
    inputs = inputs_of(data.train)
    key = cache_key(file_digest(join(config.teacher, "model.keras")), inputs)
    root = config.cache_dir()
    path = find_cache(root, key)
    if path is None:
        count = len(inputs["input_ids"])
        logger.info("%s: the teacher's outputs on %d training examples", root, count)
        shards = output_shards(teacher, inputs, config.teacher_batch_size, config.shard_size)
        path = write_cache(root, key, count, config.shard_size, shards)
    return TeacherOutputs(path)
