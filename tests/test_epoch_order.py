"""model.input.epoch_order: the epoch's record order as plain generators, against Grain's own
datasets (the order they replaced in the Grain input, and that tf.data's interleave gives)."""

from __future__ import annotations

import grain
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from model.input import epoch_order

pytestmark = pytest.mark.backend_free


class _Items(grain.IterDataset):
    """Grain source of a list's items."""

    def __init__(self, items: list):
        super().__init__()
        self.items = items

    def __iter__(self):
        return _ItemsIterator(self.items)


class _ItemsIterator(grain.DatasetIterator):
    def __init__(self, items: list):
        super().__init__()
        self.items, self.next_index = items, 0

    def __next__(self):
        if self.next_index == len(self.items):
            raise StopIteration
        self.next_index += 1
        return self.items[self.next_index - 1]

    def get_state(self):
        return {"next_index": self.next_index}

    def set_state(self, state):
        self.next_index = state["next_index"]


@settings(max_examples=60, deadline=None)
@given(
    sizes=st.lists(st.integers(0, 6), min_size=1, max_size=7),
    cycle_length=st.integers(1, 8),
)
def test_interleaved_is_grains_interleave(sizes, cycle_length):
    """Shards of any sizes, empty ones included, over any cycle length."""
    sources = [[(shard, k) for k in range(size)] for shard, size in enumerate(sizes)]
    cycle = min(cycle_length, len(sources))
    grains = grain.experimental.InterleaveIterDataset(
        [_Items(items) for items in sources], cycle_length=cycle
    )
    assert list(epoch_order.interleaved(sources, cycle, iter)) == list(grains)


@settings(max_examples=30, deadline=None)
@given(count=st.integers(0, 40), window=st.integers(1, 12), size=st.integers(1, 5))
def test_window_permuted_batches_number_every_record_once(count, window, size):
    """Positions 0..n-1 in order, each window a permutation of its records; full batches only."""
    positioned = list(epoch_order.window_permuted(iter(range(count)), 3, 1, window))
    assert [position for position, _ in positioned] == list(range(count))
    for first in range(0, count, window):
        block = [item for _, item in positioned[first : first + window]]
        assert sorted(block) == list(range(first, min(first + window, count)))
    batches = list(epoch_order.fixed_batches(iter(positioned), size))
    assert len(batches) == count // size and all(len(b) == size for b in batches)
    kept = list(epoch_order.fixed_batches(iter(positioned), size, drop_remainder=False))
    assert [item for batch in kept for item in batch] == positioned
