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
from model.finetune.kind import TaskData, inputs_of

logger = logging.getLogger(__name__)


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
