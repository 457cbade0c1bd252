"""Batch transforms shared by both backends' training steps: global loss denominators, micro-batches."""

from __future__ import annotations


def with_denominators(dataset, batch_size: int):
    """Add the global loss denominators (masked-token weight, sequences) to every example of a batch,
    so that each replica and micro-batch normalises by the whole batch's totals."""
    import tensorflow as tf

    def add(batch):
        batch = dict(batch)
        batch["mlm_denominator"] = tf.fill([batch_size], tf.reduce_sum(batch["masked_lm_weights"]) + 1e-5)
        batch["sop_denominator"] = tf.fill([batch_size], tf.cast(batch_size, tf.float32))
        return batch

    return dataset.map(add)


def micro_batches(batch: dict, accumulation: int, reshape) -> dict:
    """`batch` with each value split into `accumulation` micro-batches along a new leading axis."""
    return {k: reshape(v, accumulation) for k, v in batch.items()}
