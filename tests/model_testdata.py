"""Small model inputs shared by the model tests."""

from __future__ import annotations

import numpy as np


def padded_inputs(vocab: int, length: int, seed: int = 0) -> dict[str, np.ndarray]:
    """Three sequences of `length` random ids (int32): one full, one padded from 3/5 of its length,
    one after 3 tokens; the second segment starts at `length // 2 - 1`; padding has id and segment
    0."""
    rng = np.random.default_rng(seed)
    ids = rng.integers(5, vocab, (3, length)).astype("int32")
    mask = np.ones_like(ids)
    mask[1, length * 3 // 5 :] = 0
    mask[2, 3:] = 0
    segments = np.zeros_like(ids)
    segments[:, length // 2 - 1 :] = 1
    return {"input_ids": ids * mask, "segment_ids": segments * mask, "input_mask": mask}
