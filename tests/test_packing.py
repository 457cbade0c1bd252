"""Packed sequences (model.input.packing, model.input.packed): the rows depend on the epoch's order
alone, fill the rows, restart positions and token types per instance, and Grain and tf.data give
the same packed batches, for any number of workers and processes."""

from __future__ import annotations

import numpy as np
import pytest
from pretrain_testdata import write_shards

from model.input import grain as grain_input
from model.input import packing
from model.input import records as pretrain_records
from model.input import tf_data as pretrain_data

# Grain and tf.data, no Keras: once, in whichever pass claims the module
pytestmark = pytest.mark.backend_free

SHAPE = packing.packing_shape(32, 5, 3, 0.15)


def _instances(lengths, budget=2):
    return [(index, length, budget) for index, length in enumerate(lengths)]


def test_rows_depend_only_on_the_order_and_respect_every_bound():
    rng = np.random.default_rng(0)
    lengths = rng.integers(3, 33, size=500).tolist()
    rows = list(packing.packed_rows(_instances(lengths), SHAPE, open_rows=4))
    assert rows == list(packing.packed_rows(_instances(lengths), SHAPE, open_rows=4))
    assert sorted(i for row in rows for i in row) == list(range(500))  # each instance once
    for row in rows:
        assert 1 <= len(row) <= SHAPE.instances
        assert sum(lengths[i] for i in row) <= SHAPE.seq_len
        assert 2 * len(row) <= SHAPE.width
    share = sum(lengths) / (len(rows) * SHAPE.seq_len)
    unpacked = sum(lengths) / (len(lengths) * SHAPE.seq_len)
    assert share > 0.84 and share > 1.4 * unpacked


def test_first_fit_closes_full_rows_at_once_and_the_oldest_when_too_many_are_open():
    shape = packing.PackingShape(10, 2, 10)
    rows = list(packing.packed_rows(_instances([6, 6, 4, 9, 1, 7]), shape, open_rows=1))
    # 6 | 6 -> a second row, the first (oldest) given; 4 fills the open row (6+4); ...
    assert rows == [[0], [1, 2], [3, 4], [5]]
    budget = packing.PackingShape(10, 4, 3)  # predictions bound the row too
    assert list(packing.packed_rows(_instances([2, 2, 2], 2), budget)) == [[0], [1], [2]]
    with pytest.raises(ValueError, match="does not fit"):
        list(packing.packed_rows(_instances([11]), shape))


def test_pack_rows_restarts_positions_and_token_types_and_offsets_the_predictions():
    lengths = [5, 4, 6]
    seq = 10
    mask = (np.arange(seq)[None, :] < np.asarray(lengths)[:, None]).astype(np.int32)
    ids = (np.arange(1, 31).reshape(3, seq) * mask).astype(np.int32)
    segments = np.zeros((3, seq), np.int32)
    segments[:, 2:4] = 1
    features = {
        "input_ids": ids,
        "input_mask": mask,
        "segment_ids": segments * mask,
        "masked_lm_positions": np.array([[1, 3, 0], [2, 0, 0], [4, 5, 0]], np.int32),
        "masked_lm_ids": np.array([[7, 8, 0], [9, 0, 0], [10, 11, 0]], np.int32),
        "masked_lm_weights": np.array([[1, 1, 0], [1, 0, 0], [1, 1, 0]], np.float32),
        "next_sentence_labels": np.array([[1], [0], [1]], np.int32),
    }
    shape = packing.PackingShape(seq, 2, 4)
    row = packing.pack_rows(features, [2, 1], shape)
    assert row["input_ids"][0].tolist() == [*ids[0, :5], *ids[1, :4], 0]
    assert row["position_ids"][0].tolist() == [0, 1, 2, 3, 4, 0, 1, 2, 3, 0]
    assert row["segment_ids"][0].tolist() == [0, 0, 1, 1, 0, 0, 0, 1, 1, 0]
    assert row["instance_ids"][0].tolist() == [1] * 5 + [2] * 4 + [0]
    assert row["cls_positions"].tolist() == [[0, 5], [0, 0]]
    assert row["next_sentence_labels"].tolist() == [[1, 0], [1, 0]]
    assert row["sop_weights"].tolist() == [[1, 1], [1, 0]]
    assert row["masked_lm_positions"].tolist() == [[1, 3, 7, 0], [4, 5, 0, 0]]
    assert row["masked_lm_ids"].tolist() == [[7, 8, 9, 0], [10, 11, 0, 0]]
    assert row["masked_lm_weights"].tolist() == [[1, 1, 1, 0], [1, 1, 0, 0]]
    layout = packing.packed_layout(shape, ("input_ids", "input_mask", "segment_ids"))
    assert {name: (str(v.dtype), v.shape[1:]) for name, v in row.items()} == layout


def test_the_prediction_width_bounds_the_references_budget():
    # min(P, max(1, round(n p))) over K instances of T tokens in all: at most ceil(T p) + K
    assert packing.prediction_width(128, 20, 8, 0.15) == 28
    assert packing.prediction_width(128, 20, 1, 0.15) == 20  # never under one instance's P
    assert packing.prediction_width(512, 80, 8, 0.15) == 85


@pytest.fixture(scope="module")
def short_records(tmp_path_factory):
    """3 shards of 24 records of 6 to 32 tokens, dynamically masked."""
    data = write_shards(tmp_path_factory.mktemp("short"), per_shard=24, dynamic=True, min_length=6)
    return pretrain_records.inspect_data(str(data))


def _same(ours, theirs):
    ours, theirs = list(ours), list(theirs)
    assert ours and len(ours) == len(theirs)
    for a, b in zip(ours, theirs):
        assert sorted(a) == sorted(b)
        for name in a:
            np.testing.assert_array_equal(a[name], b[name], err_msg=name)
            assert a[name].dtype == b[name].dtype, name
    return ours


def test_grain_and_tf_data_give_the_same_packed_batches_for_any_workers(short_records):
    options = {"epoch": 1, "seed": 3, "shuffle_buffer": 10, "packing": 3}
    grain = grain_input.train_batches(short_records, 4, denominators=False, **options)
    tf_batches = pretrain_data.train_dataset(short_records, 4, **options, workers=2)
    batches = _same(grain, tf_batches.as_numpy_iterator())
    assert batches[0]["cls_positions"].shape == (4, 3)
    assert batches[0]["input_ids"].shape == (4, 32)
    skipped = grain_input.train_batches(
        short_records, 4, denominators=False, **options, skip_batches=1
    )
    _same(batches[1:], skipped)
    rows = [
        grain_input.train_batches(
            short_records, 4, **options, denominators=False, process=(index, 2)
        )
        for index in range(2)
    ]
    for whole, (first, second) in zip(batches, zip(*rows)):  # a process keeps its packed rows
        for name in whole:
            np.testing.assert_array_equal(whole[name], np.concatenate([first[name], second[name]]))
    assert all(b["sop_weights"].sum() >= 4 for b in batches)  # records of 16 to 32 tokens


def test_packed_denominators_count_the_instances(short_records):
    batch = next(iter(grain_input.train_batches(short_records, 2, epoch=0, seed=0, packing=3)))
    assert batch["sop_denominator"][0] == batch["sop_weights"].sum() > 2
    assert batch["mlm_denominator"][0] == pytest.approx(batch["masked_lm_weights"].sum(), 1e-4)
