"""The teacher's model (its vocabulary checked against the student's) and its outputs on the
training examples, written once to the teacher-outputs cache (`model.distill.cache`); the checks
that need no Keras are `model.distill.checks`."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import keras
import numpy as np

from albert.errors import StageError, naming
from albert.fs import file_digest, join
from model.distill.cache import TeacherOutputs, cache_key, find_cache, write_cache
from model.distill.config import DistillConfig
from model.distill.serving import parameters
from model.finetune.kind import TaskData, inputs_of
from model.finetune.models import FinetuneModel
from model.tasks import get_task

logger = logging.getLogger(__name__)


def load_teacher(config: DistillConfig, vocab_size: int) -> keras.Model:
    """The teacher's fine-tuned model; a StageError naming --teacher for a model without
    --task's head (a pretrained model beside a fine-tuning's results.json) and for a vocabulary of
    another size than `vocab_size` (the student's). Checked before any output is computed."""
    path = join(config.teacher, "model.keras")
    with naming(path):
        model = keras.saving.load_model(path, compile=False)
    spec = get_task(config.task)
    if not isinstance(model, FinetuneModel) or (model.kind, model.num_labels) != (
        spec.kind,
        spec.num_labels,
    ):
        raise StageError(
            f"--teacher {config.teacher}: its model.keras has no task head for --task "
            f"{spec.name} ({type(model).__name__}): give an `albert finetune` output"
        )
    pieces = model.backbone.config.vocab_size
    if pieces != vocab_size:
        raise StageError(
            f"--teacher {config.teacher}: a vocabulary of {pieces} pieces, the student's "
            f"(--spm-model {config.spm_model}) has {vocab_size}"
        )
    return model


def compare_sizes(config: DistillConfig, teacher: keras.Model, student: keras.Model) -> None:
    """A warning when the student has more parameters than its teacher (distillation trains a
    smaller model; a larger one is allowed, and named)."""
    sizes = parameters(student), parameters(teacher)
    if sizes[0] > sizes[1]:
        logger.warning(
            "the student (--student %s) has %s parameters, more than the teacher's %s "
            "(--teacher %s)",
            config.student,
            f"{sizes[0]:,}",
            f"{sizes[1]:,}",
            config.teacher,
        )


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
