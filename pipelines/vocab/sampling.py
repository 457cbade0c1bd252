"""Deterministic, hash-based sampling of sentences: the same corpus and seed give the same sample
anywhere.

Every sentence gets a 64-bit key, a stable hash of the seed and its text. Keys are uniform, so the
sentences whose key falls below a bound are a uniform sample, whatever the sharding, runner or
worker count. The held-out slice is the lowest keys; the training sample the next `sample_sentences`
keys (`sample_bounds` leaves a margin; `keep_smallest_keys` cuts to the exact size).
Identical sentences share a key, so they are all in or all out together: each sentence still appears
in the sample with probability proportional to its count, and the held-out slice never shares a
sentence with the training sample."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

from albert.hashing import stable_hash

KEY_SPACE = 1 << 64
Role = Literal["heldout", "train"]


def sentence_key(sentence: str, seed: int) -> int:
    """A uniform 64-bit key of `sentence` under `seed` (stable across processes and machines)."""
    return stable_hash(f"{seed}\n".encode() + sentence.encode("utf-8"))


@dataclass(frozen=True)
class SampleBounds:
    """Keys below `heldout_end` are held out; keys in [heldout_end, train_end) are training
    candidates."""

    heldout_end: int
    train_end: int


def sample_bounds(total: int, sample_sentences: int, heldout_sentences: int) -> SampleBounds:
    """Key bounds that select ~`heldout_sentences` held-out and >= `sample_sentences` candidates of
    `total`.

    At most 5% of the corpus is held out. The candidate range has a margin of several standard
    deviations so that it holds at least `sample_sentences` keys; `keep_smallest_keys` then cuts it
    exactly."""
    if total <= 0:
        return SampleBounds(0, 0)
    heldout = min(heldout_sentences, total // 20)
    heldout_end = KEY_SPACE * heldout // total
    wanted = sample_sentences + 6 * math.isqrt(sample_sentences) + 100
    train_end = min(KEY_SPACE, heldout_end + KEY_SPACE * wanted // total)
    return SampleBounds(heldout_end, train_end)


def sample_role(key: int, bounds: SampleBounds) -> Role | None:
    """Which part of the sample a sentence with `key` belongs to, if any."""
    if key < bounds.heldout_end:
        return "heldout"
    if key < bounds.train_end:
        return "train"
    return None


def keep_smallest_keys(pairs: list[tuple[int, str]], k: int) -> list[tuple[int, str]]:
    """Sort (key, sentence) pairs in place and cut them to the `k` smallest keys; returns
    `pairs`."""
    pairs.sort()
    del pairs[k:]
    return pairs
