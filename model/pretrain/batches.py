"""Batch transforms shared by both backends' training steps: micro-batches."""

from __future__ import annotations


def micro_batches(batch: dict, accumulation: int, reshape) -> dict:
    """`batch` with each value split into `accumulation` micro-batches along a new leading axis."""
    return {k: reshape(v, accumulation) for k, v in batch.items()}
