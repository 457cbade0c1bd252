"""Hash-based sentence sampling: stable keys, uniform bounds, exact-size deterministic samples."""

from __future__ import annotations

import random

import pytest

from albert.hashing import stable_hash
from pipelines.vocab import sampling

pytestmark = pytest.mark.backend_free


def test_sentence_key_is_a_seeded_stable_hash():
    assert sampling.sentence_key("A sentence.", 0) == stable_hash(b"0\nA sentence.")
    assert sampling.sentence_key("A sentence.", 0) != sampling.sentence_key("A sentence.", 1)
    assert 0 <= sampling.sentence_key("é", 3) < sampling.KEY_SPACE


def test_bounds_hold_out_at_most_five_percent_and_cover_the_sample():
    assert sampling.sample_bounds(0, 100, 10) == sampling.SampleBounds(0, 0)
    bounds = sampling.sample_bounds(1000, 10_000, 500)
    assert bounds.heldout_end == sampling.KEY_SPACE * 50 // 1000
    assert (
        bounds.train_end == sampling.KEY_SPACE
    )  # the sample wants more than the corpus: take it all
    bounds = sampling.sample_bounds(1_000_000, 10_000, 1000)
    assert bounds.heldout_end == sampling.KEY_SPACE * 1000 // 1_000_000
    assert bounds.heldout_end < bounds.train_end < sampling.KEY_SPACE
    assert sampling.sample_bounds(1000, 10, 0).heldout_end == 0


def test_roles_split_the_key_space():
    bounds = sampling.SampleBounds(10, 20)
    assert [sampling.sample_role(key, bounds) for key in (0, 9, 10, 19, 20)] == [
        "heldout",
        "heldout",
        "train",
        "train",
        None,
    ]


def _corpus(n: int) -> list[str]:
    rng = random.Random(0)
    return [f"sentence {i} {rng.random():.6f}" for i in range(n)]


def test_sample_is_uniform_exact_size_and_independent_of_order():
    sentences = _corpus(20_000)
    k, heldout_wanted = 2000, 400
    bounds = sampling.sample_bounds(len(sentences), k, heldout_wanted)

    def draw(ordered):
        keyed = [(sampling.sentence_key(s, 7), s) for s in ordered]
        roles = [(sampling.sample_role(key, bounds), key, s) for key, s in keyed]
        train = [(key, s) for role, key, s in roles if role == "train"]
        heldout = sorted(s for role, _, s in roles if role == "heldout")
        return sampling.keep_smallest_keys(train, k), heldout

    sample, heldout = draw(sentences)
    shuffled = list(sentences)
    random.Random(1).shuffle(shuffled)
    assert draw(shuffled) == (sample, heldout)
    assert len(sample) == k and sample == sorted(sample)
    assert abs(len(heldout) - heldout_wanted) < 5 * heldout_wanted**0.5
    assert not set(heldout) & {s for _, s in sample}
    # Uniform: the sample's mean position in the corpus is near the middle.
    index = {s: i for i, s in enumerate(sentences)}
    mean = sum(index[s] for _, s in sample) / k
    assert abs(mean - len(sentences) / 2) < 4 * len(sentences) / (12 * k) ** 0.5
