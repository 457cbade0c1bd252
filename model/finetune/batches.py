"""Fine-tuning batches from in-memory arrays for `model.fit`: tf.data on the TensorFlow backend,
Grain on the others (so the JAX backend fine-tunes without importing TensorFlow).

Both read the same contract: `elements` is a tuple (inputs, labels[, weights]) of trees of
equal-length NumPy arrays; the batches shuffle with `seed` over the whole set (the shuffle buffer
holds every example: a task file's order, e.g. SST-2's grouped rows, never leaks into the batches),
reshuffle every epoch, repeat forever and run across epoch boundaries. The two backends draw
different permutations from the same seed.

tf.data's autotuning is off for these in-memory datasets: there is nothing to tune, and its model
thread, which sleeps ever longer between rounds (up to a minute), held the iterator's deletion at
the end of `fit` for as long (35 s after 300 steps of CoLA on a shared 2-core CPU).
"""

from __future__ import annotations

import keras
import numpy as np


def _length(elements) -> int:
    return len(keras.tree.flatten(elements)[0])


def _uses_tf_data() -> bool:
    return keras.config.backend() == "tensorflow"


def _without_autotune(dataset):
    """`dataset` with tf.data's autotuning off (see the module docstring)."""
    import tensorflow as tf  # heavy: only the TensorFlow backend needs tf.data

    options = tf.data.Options()
    options.autotune.enabled = False
    return dataset.with_options(options)


def _rows(elements):
    """index (or index array) -> the rows of `elements` there."""

    def rows(index):
        return keras.tree.map_structure(lambda array: array[index], elements)

    return rows


def _shuffled_indices(elements, seed: int):
    """Grain: the example indices of `elements`, reshuffled every epoch, repeated forever."""
    import grain  # optional: the Grain input, off the TensorFlow backend

    return grain.MapDataset.range(_length(elements)).shuffle(seed=seed).repeat()


def train_batches(elements, batch_size: int, seed: int):
    """Shuffled, repeated batches of `elements` (see the module contract)."""
    if _uses_tf_data():
        import tensorflow as tf  # heavy: only the TensorFlow backend needs tf.data

        dataset = tf.data.Dataset.from_tensor_slices(elements)
        dataset = dataset.shuffle(_length(elements), seed=seed).repeat().batch(batch_size)
        return _without_autotune(dataset.prefetch(2))
    return (
        _shuffled_indices(elements, seed)
        .batch(batch_size, batch_fn=np.asarray)
        .map(_rows(elements))
    )


def mixture_batches(parts: list, batch_size: int, seed: int):
    """Batches drawing examples from every part of `parts` (each a tuple of `elements`) in
    proportion to the parts' sizes; each part shuffled and repeated (see the module contract)."""
    sizes = [_length(part) for part in parts]
    weights = [size / sum(sizes) for size in sizes]
    if _uses_tf_data():
        import tensorflow as tf  # heavy: only the TensorFlow backend needs tf.data

        datasets = [
            tf.data.Dataset.from_tensor_slices(part).shuffle(size, seed=seed).repeat()
            for part, size in zip(parts, sizes)
        ]
        mixed = tf.data.Dataset.sample_from_datasets(datasets, weights=weights, seed=seed)
        return _without_autotune(mixed.batch(batch_size).prefetch(2))
    import grain  # optional: the Grain input, off the TensorFlow backend

    examples = [_shuffled_indices(part, seed).map(_rows(part)) for part in parts]
    return grain.MapDataset.mix(examples, weights=weights).batch(batch_size)
