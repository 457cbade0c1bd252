"""Fine-tuning batches (tf.data on TensorFlow, Grain on JAX): every example once an epoch,
reshuffled each epoch, the same for the same seed, a multi-task mixture in proportion to the
tasks' sizes, and batches trimmed to their longest example without changing the model's output."""

from __future__ import annotations

import itertools
import threading

import keras
import numpy as np
import pytest

from model.finetune.batches import length_edges, mixture_batches, train_batches
from model.finetune.models import FinetuneModel
from model.network.backbone import AlbertBackbone
from model.network.config import get_preset

pytestmark = pytest.mark.keras


def first_batches(dataset, count: int) -> list:
    return [np.asarray(batch[1]) for batch in itertools.islice(iter(dataset), count)]


def elements(n: int, marker: int):
    """(inputs, labels): labels are the example's index; inputs carry a `marker` column."""
    return {
        "input_ids": np.stack([np.arange(n), np.full(n, marker)], 1).astype(np.int32)
    }, np.arange(n)


def test_every_example_once_an_epoch_reshuffled_and_seeded(keras_backend):
    data = elements(12, 0)
    batches = first_batches(train_batches(data, 4, seed=3), 6)
    first, second = np.concatenate(batches[:3]), np.concatenate(batches[3:])
    assert sorted(first) == sorted(second) == list(range(12))
    assert list(first) != list(second) and list(first) != list(range(12))
    again = first_batches(train_batches(data, 4, seed=3), 6)
    assert all((a == b).all() for a, b in zip(batches, again))
    other = np.concatenate(first_batches(train_batches(data, 4, seed=4), 3))
    assert list(other) != list(first)


def test_mixture_draws_in_proportion_to_sizes(keras_backend):
    large, small = elements(30, 1), elements(10, 2)
    batches = list(itertools.islice(iter(mixture_batches([large, small], 8, seed=0)), 50))
    markers = np.concatenate([np.asarray(inputs["input_ids"])[:, 1] for inputs, _ in batches])
    assert set(markers) == {1, 2} and abs(np.mean(markers == 1) - 0.75) < 0.08
    labels = np.concatenate([np.asarray(labels) for _, labels in batches])
    assert labels[markers == 2].max() < 10 and labels[markers == 1].max() < 30


def test_grain_reads_with_one_thread(keras_backend):
    """Grain's default (16 threads filling 500 batches as an iterator starts) built batches no step
    takes and held the training loop off the interpreter: one thread reads two batches ahead, as
    tf.data's `prefetch(2)` (model/finetune/batches.py)."""
    if keras_backend == "tensorflow":
        pytest.skip("the Grain input is the other backends': tf.data prefetches two on TensorFlow")
    data = ({"input_ids": np.arange(40)[:, None]}, np.arange(40))
    for dataset in (train_batches(data, 2, seed=0), mixture_batches([data, data], 2, seed=0)):
        before = threading.active_count()
        next(iter(dataset))
        assert threading.active_count() - before <= 1


def sequences(lengths: list[int], width: int):
    """(inputs, labels): rows of ids 5.. with `lengths` real tokens padded to `width`; the labels
    are the row indices."""
    mask = (np.arange(width)[None, :] < np.asarray(lengths)[:, None]).astype(np.int32)
    ids = (np.arange(width)[None, :] + 5) * mask
    inputs = {"input_ids": ids, "segment_ids": np.zeros_like(ids), "input_mask": mask}
    return inputs, np.arange(len(lengths))


def test_trimmed_batches_keep_every_real_token(keras_backend):
    assert length_edges(128) == [16, 24, 32, 48, 64, 96, 128] and length_edges(10) == [10]
    data = sequences([3, 20, 7, 50, 9, 12, 30, 5], 128)
    for trim_batch, full in zip(
        first_batches_with_inputs(train_batches(data, 2, seed=1, trim=True), 8),
        first_batches_with_inputs(train_batches(data, 2, seed=1), 8),
    ):
        (inputs, labels), (full_inputs, full_labels) = trim_batch, full
        longest = int(full_inputs["input_mask"].sum(-1).max())
        width = inputs["input_ids"].shape[-1]
        assert width == min(e for e in length_edges(128) if e >= longest)
        assert (labels == full_labels).all()
        for name, values in inputs.items():
            assert (values == full_inputs[name][:, :width]).all()
            assert not full_inputs[name][:, width:].any()  # only padding was cut


def first_batches_with_inputs(dataset, count: int) -> list:
    return [
        ({k: np.asarray(v) for k, v in inputs.items()}, np.asarray(labels))
        for inputs, labels in itertools.islice(iter(dataset), count)
    ]


def test_a_trimmed_batch_gives_the_padded_batchs_logits(keras_backend):
    keras.utils.set_random_seed(0)
    backbone = AlbertBackbone(get_preset("albert-nano", vocab_size=100), name="albert")
    model = FinetuneModel(backbone, "classification", 2, "pooled", 0.0)
    inputs, _ = sequences([3, 9, 14], 64)
    inputs["input_ids"] = inputs["input_ids"] % 100
    trimmed = {name: values[:, :16] for name, values in inputs.items()}
    np.testing.assert_allclose(
        model.predict(trimmed, verbose=0), model.predict(inputs, verbose=0), rtol=0, atol=1e-6
    )
