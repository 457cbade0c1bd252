"""albert.batch_masking: a whole batch masked at once equals `albert.masking.mask_tokens` record by
record, with the trainer's `[seed, epoch, index]` generators, on real tokenized data."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from albert import batch_masking, masking
from albert.pretraining_example import decode_example
from albert.tfrecord_framing import tfrecord_records
from tests.conftest import shared_path

pytestmark = pytest.mark.backend_free

VOCAB = 16000  # the reference's sp16k vocabulary


@pytest.fixture(scope="module")
def real_batch():
    """The reference's 2,110 real s128 instances, unmasked again (input_ids, token_boundary)."""
    path = shared_path("reference", "ref_seq128.tfrecord")
    ids, boundaries = [], []
    for record in tfrecord_records(str(path)):
        example = decode_example(record)
        count = int(example["masked_lm_weights"].sum())
        example["input_ids"][example["masked_lm_positions"][:count]] = example["masked_lm_ids"][
            :count
        ]
        ids.append(example["input_ids"])
        boundaries.append(example["token_boundary"].astype(bool))
    return np.stack(ids), np.stack(boundaries)


def assert_rows_equal(ids, boundaries, indices, seed, epoch, **options):
    masking_options = masking.albert_options(
        VOCAB,
        options.get("max_predictions_per_seq", 20),
        options.get("masked_lm_prob", 0.15),
        options.get("ngram", 3),
        options.get("favor_shorter_ngram", True),
    )
    generators = [np.random.default_rng([seed, epoch, int(i)]) for i in indices]
    counts = np.zeros(masking_options.ngram + 1, np.int64)
    batch = batch_masking.mask_batch(ids, boundaries, generators, masking_options, counts)
    expected_counts = np.zeros_like(counts)
    for row, index in enumerate(indices):
        rng = np.random.default_rng([seed, epoch, int(index)])
        expected = masking.mask_instance(
            ids[row], boundaries[row], rng, masking_options, expected_counts
        )
        count = int(batch.counts[row])
        assert count == len(expected.positions)
        np.testing.assert_array_equal(batch.masked_ids[row], expected.masked_ids)
        np.testing.assert_array_equal(batch.positions[row, :count], expected.positions)
        np.testing.assert_array_equal(batch.labels[row, :count], expected.labels)
        assert not batch.positions[row, count:].any() and not batch.labels[row, count:].any()
        assert generators[row].random() == rng.random()  # the same draws were consumed
    np.testing.assert_array_equal(counts, expected_counts)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    seed=st.integers(0, 2**32 - 1),
    epoch=st.integers(0, 50),
    first=st.integers(0, 2110 - 64),
    size=st.integers(1, 64),
    cut=st.integers(3, 128),
)
def test_batch_equals_mask_tokens_record_by_record(real_batch, seed, epoch, first, size, cut):
    ids, boundaries = real_batch
    ids, boundaries = ids[first : first + size].copy(), boundaries[first : first + size]
    ids[::2, cut:] = 0  # shorter rows padded, as in batches of records of several lengths
    assert_rows_equal(ids, boundaries, range(first, first + size), seed, epoch)


@pytest.mark.parametrize(
    "options",
    [
        {"max_predictions_per_seq": 5, "ngram": 1},
        {"masked_lm_prob": 0.4, "max_predictions_per_seq": 60, "favor_shorter_ngram": False},
        {"masked_lm_prob": 0.0},
    ],
)
def test_batch_equals_mask_tokens_under_other_options(real_batch, options):
    ids, boundaries = real_batch
    assert_rows_equal(ids[:256], boundaries[:256], range(256), 7, 1, **options)


def test_rows_without_words_or_tokens(real_batch):
    ids, boundaries = real_batch
    ids = ids[:3].copy()
    ids[0] = 0  # all padding
    ids[1, 1:] = 0  # [CLS] only
    assert_rows_equal(ids, boundaries[:3], range(3), 0, 0)
