"""Stable hashing: the same value in every process, on every machine and every runner (Python's
`hash` is salted per process). Every keyed random choice in the system derives from these."""

from __future__ import annotations

import hashlib

import numpy as np


def stable_hash(data: bytes) -> int:
    """A 64-bit hash of `data`: the first 8 bytes of its SHA-256, big-endian."""
    return int.from_bytes(hashlib.sha256(data).digest()[:8], "big")


def derive_seed(*parts: int) -> int:
    """A 31-bit seed derived from integers, e.g. `(seed, epoch)`: `stable_hash` of "p1:p2:…".

    The hash's first 4 bytes, read little-endian: a run resumed across versions reads the same data
    order only while this stays as it is.
    """
    top = stable_hash(":".join(str(int(p)) for p in parts).encode()) >> 32
    return int.from_bytes(top.to_bytes(4, "big"), "little") & 0x7FFFFFFF


def mix64(keys: np.ndarray) -> np.ndarray:
    """splitmix64's finaliser on an array of 64-bit keys: keys scrambled so that different inputs'
    keys differ (the n-gram keys of the quality rules and the reference model)."""
    keys = (keys ^ (keys >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    keys = (keys ^ (keys >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return keys ^ (keys >> np.uint64(31))
