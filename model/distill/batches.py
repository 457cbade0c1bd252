"""Distillation batches: fine-tuning's (`model.finetune.batches.train_batches`: the same shuffle,
trim and resume position) with each batch's cached teacher outputs read from the cache by the
examples' indices (`TeacherOutputs.rows`) and carried in the inputs as `teacher`. tf.data reads
them in a `tf.numpy_function`, Grain in a map: one batch's rows at a time."""

from __future__ import annotations

import keras
import numpy as np

from model.distill.cache import TeacherOutputs
from model.finetune.batches import train_batches
from model.finetune.kind import TaskData, inputs_of


def with_teacher(batches, outputs: TeacherOutputs):
    """`batches` of (inputs, (labels, example index)) -> (inputs + `teacher`, labels)."""
    names = outputs.names
    if keras.config.backend() != "tensorflow":

        def add(batch):
            inputs, (labels, index) = batch
            return {**inputs, "teacher": outputs.rows(index)}, labels

        return batches.map(add)
    import tensorflow as tf  # heavy: only the TensorFlow backend needs tf.data

    def rows(index):
        found = outputs.rows(index)
        return tuple(found[name] for name in names)

    def add_tensors(inputs, rest):
        labels, index = rest
        dtypes = [tf.as_dtype(outputs.dtypes[name]) for name in names]
        values = tf.numpy_function(rows, [index], dtypes, stateful=False)
        teacher = {}
        for name, value in zip(names, values):
            value.set_shape([None, *outputs.shapes[name]])
            teacher[name] = value
        return {**inputs, "teacher": teacher}, labels

    return batches.map(add_tensors).prefetch(2)


def distill_batches(
    data: TaskData, outputs: TeacherOutputs, batch_size: int, seed: int, skip: int = 0
):
    """The training batches from batch `skip` on, each with its teacher outputs."""
    count = len(data.train["input_ids"])
    elements = (inputs_of(data.train), (data.train["labels"], np.arange(count, dtype=np.int64)))
    batches = train_batches(elements, batch_size, seed, trim=True, skip=skip)
    return with_teacher(batches, outputs)
