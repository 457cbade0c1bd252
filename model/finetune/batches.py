"""Fine-tuning batches from in-memory arrays for `model.fit`: tf.data on the TensorFlow backend,
Grain on the others (so the JAX backend fine-tunes without importing TensorFlow).

Both read the same contract: `elements` is a tuple (inputs, labels[, weights]) of trees of
equal-length NumPy arrays; the batches shuffle with `seed` over the whole set (the shuffle buffer
holds every example: a task file's order, e.g. SST-2's grouped rows, never leaks into the batches),
reshuffle every epoch, repeat forever and run across epoch boundaries. The two backends draw
different permutations from the same seed.

With `trim`, each batch's token arrays (every input of `[..., T]`; `input_mask` names the real
tokens) are cut to the first of `length_edges(T)` that holds the batch's longest example: a batch of
short sentences costs a short sequence's step, and the model's outputs are the padded batch's
(padding is masked), up to float rounding. Which examples make a batch does not change; the shapes
are a handful, so the compiled step is reused (tf.data: one trace, XLA compiles a shape once).

tf.data's autotuning is off for these in-memory datasets: there is nothing to tune, and its model
thread, which sleeps ever longer between rounds (up to a minute), held the iterator's deletion at
the end of `fit` for as long (35 s after 300 steps of CoLA on a shared 2-core CPU). Grain reads
them as tf.data does, one thread two batches ahead (`GRAIN_READ`): its default, 16 threads filling
500 batches whenever an iterator starts, built batches no step would take and held the training
loop off the interpreter meanwhile (a 4-step TF-free SST-2 and STS-B run: 52 CPU-s in 34 s).
"""

from __future__ import annotations

import keras
import numpy as np

GRAIN_READ = {"num_threads": 1, "prefetch_buffer_size": 2}
"""How Grain reads the batches ahead of the step: `grain.ReadOptions`'s fields."""


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


def length_edges(width: int) -> list[int]:
    """The lengths a trimmed batch is cut to: from 16, each power of two and one and a half times
    it, below `width`, then `width` (128 -> 16, 24, 32, 48, 64, 96, 128)."""
    edges, power = [], 16
    while power < width:
        edges += [power, power * 3 // 2]
        power *= 2
    return [edge for edge in edges if edge < width] + [width]


def _trim_arrays(batch):
    """A NumPy batch (inputs, labels[, weights]) with its inputs cut (see the module docstring)."""
    inputs, *rest = batch
    longest = int(np.asarray(inputs["input_mask"]).sum(axis=-1).max())
    edge = next(e for e in length_edges(inputs["input_mask"].shape[-1]) if e >= longest)
    return ({name: values[..., :edge] for name, values in inputs.items()}, *rest)


def _trim_tensors(width: int):
    """tf.data's `_trim_arrays` for batches whose inputs are `width` long."""
    import tensorflow as tf  # heavy: only the TensorFlow backend needs tf.data

    edges = tf.constant(length_edges(width))

    def trim(inputs, *rest):
        longest = tf.reduce_max(tf.reduce_sum(tf.cast(inputs["input_mask"], tf.int32), -1))
        edge = edges[tf.searchsorted(edges, tf.reshape(longest, [1]))[0]]
        return ({name: values[..., :edge] for name, values in inputs.items()}, *rest)

    return trim


def _trimmed(batches, elements, trim: bool):
    """`batches` (tf.data or Grain) of `elements`, trimmed when `trim` (module docstring)."""
    if not trim:
        return batches
    if _uses_tf_data():
        return batches.map(_trim_tensors(elements[0]["input_mask"].shape[-1]))
    return batches.map(_trim_arrays)


def _rows(elements):
    """index (or index array) -> the rows of `elements` there."""

    def rows(index):
        return keras.tree.map_structure(lambda array: array[index], elements)

    return rows


def _read_ahead(batches):
    """Grain's `batches` read `GRAIN_READ`'s way (the module docstring)."""
    import grain  # optional: the Grain input, off the TensorFlow backend

    return batches.to_iter_dataset(grain.ReadOptions(**GRAIN_READ))


def _shuffled_indices(elements, seed: int):
    """Grain: the example indices of `elements`, reshuffled every epoch, repeated forever."""
    import grain  # optional: the Grain input, off the TensorFlow backend

    return grain.MapDataset.range(_length(elements)).shuffle(seed=seed).repeat()


def _skipped(batches, skip: int):
    """`batches` from the one at index `skip` on (a resumed run's position): tf.data reads and
    drops the first `skip`, Grain's random-access dataset starts there."""
    if not skip:
        return batches
    return batches.skip(skip) if _uses_tf_data() else batches[skip:]


def train_batches(elements, batch_size: int, seed: int, trim: bool = False, skip: int = 0):
    """Shuffled, repeated batches of `elements`, cut to their longest example with `trim` (see
    the module docstring), from batch `skip` on (the batches a run resumed after `skip` steps
    takes next: the same as the uninterrupted run's)."""
    if _uses_tf_data():
        import tensorflow as tf  # heavy: only the TensorFlow backend needs tf.data

        dataset = tf.data.Dataset.from_tensor_slices(elements)
        dataset = dataset.shuffle(_length(elements), seed=seed).repeat().batch(batch_size)
        dataset = _skipped(dataset, skip)
        return _without_autotune(_trimmed(dataset, elements, trim).prefetch(2))
    batches = _skipped(
        _shuffled_indices(elements, seed).batch(batch_size, batch_fn=np.asarray), skip
    ).map(_rows(elements))
    return _read_ahead(_trimmed(batches, elements, trim))


def mixture_batches(parts: list, batch_size: int, seed: int, trim: bool = False, skip: int = 0):
    """Batches drawing examples from every part of `parts` (each a tuple of `elements`) in
    proportion to the parts' sizes; each part shuffled and repeated, the batches cut to their
    longest example with `trim` (see the module docstring), from batch `skip` on."""
    sizes = [_length(part) for part in parts]
    weights = [size / sum(sizes) for size in sizes]
    if _uses_tf_data():
        import tensorflow as tf  # heavy: only the TensorFlow backend needs tf.data

        datasets = [
            tf.data.Dataset.from_tensor_slices(part).shuffle(size, seed=seed).repeat()
            for part, size in zip(parts, sizes)
        ]
        mixed = tf.data.Dataset.sample_from_datasets(datasets, weights=weights, seed=seed)
        mixed = _skipped(mixed.batch(batch_size), skip)
        return _without_autotune(_trimmed(mixed, parts[0], trim).prefetch(2))
    import grain  # optional: the Grain input, off the TensorFlow backend

    examples = [_shuffled_indices(part, seed).map(_rows(part)) for part in parts]
    mixed = _skipped(grain.MapDataset.mix(examples, weights=weights).batch(batch_size), skip)
    return _read_ahead(_trimmed(mixed, parts[0], trim))
