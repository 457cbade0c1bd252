"""Fine-tuning batches (tf.data on TensorFlow, Grain on JAX): every example once an epoch,
reshuffled each epoch, the same for the same seed, and a multi-task mixture in proportion to the
tasks' sizes."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from model.finetune.batches import mixture_batches, train_batches

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
