"""Packed sequences: several pretraining instances in one row of `T` tokens, pure NumPy.

A row holds at most `K` instances (`PackingShape.instances`) whose real tokens (`input_mask`) fit
in `T` together and whose masked-LM predictions fit in the row's `width` prediction slots. Which
instances share a row is decided by `packed_rows`, a greedy first fit over a bounded window of open
rows in the order the instances come (the epoch's order): it depends on that order alone, so the
rows, and the batches of rows, are the same for any number of input workers or processes (a process
keeps its rows of each global batch of rows).

`pack_rows` lays the instances of each row out one after another, each with its own positions and
token types (both restart at 0 with each instance), the index (1..K) of its instance on every token
(0 on padding) for the block-diagonal attention, the position of its `[CLS]` and its SOP label and
weight (1; 0 for an empty slot), and its masked-LM positions offset to where it starts in the row.

The packed features of a batch of `R` rows (int32 unless said):
  input_ids, input_mask, segment_ids, token_boundary, position_ids, instance_ids   [R, T]
  cls_positions, next_sentence_labels                                            [R, K]
  sop_weights                                                             float32 [R, K]
  masked_lm_positions, masked_lm_ids                                             [R, width]
  masked_lm_weights                                                       float32 [R, width]
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

import numpy as np

DEFAULT_INSTANCES = 8
"""K by default. Our shards (books, dynamic masking) hold many short instances: at s512 the real
tokens are 34% of the unpacked rows' and a row of 4 slots is filled to 84%, of 8 slots to 99.3%
(at s128: 67% unpacked, 99.4% with 8 slots); docs/measurements.md, packing. A slot costs one
`[CLS]` gather, one SOP prediction and about one masked-LM prediction slot (`prediction_width`)."""

OPEN_ROWS = 64
"""Rows kept open for the first fit (the oldest is closed when one more would be opened): 64 fill
rows about 0.3% fuller than 16 at s128, for about 8 µs per record in each worker."""

SEQUENCE_FEATURES = ("input_ids", "input_mask", "segment_ids", "token_boundary")
"""The per-token features an instance brings into its row (`token_boundary` when it has one)."""


@dataclass(frozen=True)
class PackingShape:
    """The packed row: `seq_len` tokens, at most `instances` instances and `width` masked-LM
    prediction slots."""

    seq_len: int
    instances: int
    width: int


def prediction_width(seq_len: int, predictions: int, instances: int, masked_lm_prob: float) -> int:
    """Prediction slots of a packed row: the reference's budget, min(P, max(1, round(n * p))) for
    an instance of n tokens, sums to at most ceil(T * p) + K over a row of T tokens and K instances;
    never fewer than one instance's P, never more than K * P."""
    bound = math.ceil(seq_len * masked_lm_prob) + instances
    return min(instances * predictions, max(predictions, bound))


def packing_shape(
    seq_len: int, predictions: int, instances: int, masked_lm_prob: float
) -> PackingShape:
    """The `PackingShape` of data of `seq_len` tokens and `predictions` per instance."""
    if instances < 1:
        raise ValueError(f"instances per packed row must be >= 1, got {instances}")
    return PackingShape(
        seq_len, instances, prediction_width(seq_len, predictions, instances, masked_lm_prob)
    )


def packed_rows(
    items: Iterable[tuple[object, int, int]], shape: PackingShape, open_rows: int = OPEN_ROWS
) -> Iterator[list]:
    """Rows (lists of items) of `(item, tokens, predictions)` in that order: each item goes into the
    first open row (in the order they were opened) it fits, else into a new row. A row is given as
    soon as it is full (`T` tokens or `K` instances); when more than `open_rows` are open, the
    oldest is given; at the end, the rest in the order they were opened."""
    rows: list[list] = []  # open rows: [items, tokens, predictions]
    for item, tokens, predictions in items:
        if tokens > shape.seq_len or predictions > shape.width:
            raise ValueError(
                f"an instance of {tokens} tokens and {predictions} predictions does not fit a "
                f"packed row of {shape.seq_len} tokens and {shape.width} predictions"
            )
        slot = next(
            (
                k
                for k, (members, used, predicted) in enumerate(rows)
                if used + tokens <= shape.seq_len
                and predicted + predictions <= shape.width
                and len(members) < shape.instances
            ),
            len(rows),
        )
        if slot == len(rows):
            rows.append([[], 0, 0])
        row = rows[slot]
        row[0].append(item)
        row[1] += tokens
        row[2] += predictions
        if len(row[0]) == shape.instances or row[1] == shape.seq_len:
            yield rows.pop(slot)[0]
        elif len(rows) > open_rows:
            yield rows.pop(0)[0]
    for members, _, _ in rows:
        yield members


def packed_layout(
    shape: PackingShape, sequence_features=SEQUENCE_FEATURES
) -> dict[str, tuple[str, tuple[int]]]:
    """name -> (dtype, shape of one row) of the packed features (see the module doc), with these of
    `SEQUENCE_FEATURES`."""
    seq, slots, width = (shape.seq_len,), (shape.instances,), (shape.width,)
    tokens = (*sequence_features, "position_ids", "instance_ids")
    return {
        **{name: ("int32", seq) for name in tokens},
        "cls_positions": ("int32", slots),
        "next_sentence_labels": ("int32", slots),
        "sop_weights": ("float32", slots),
        "masked_lm_positions": ("int32", width),
        "masked_lm_ids": ("int32", width),
        "masked_lm_weights": ("float32", width),
    }


def pack_rows(features: dict, row_sizes: Sequence[int], shape: PackingShape) -> dict:
    """The packed features (see the module doc) of rows of consecutive instances: the first
    `row_sizes[0]` instances of `features` (unpacked, `[n, T]`, `[n, P]`, `[n, 1]`: a decoded,
    masked batch) make row 0, the next `row_sizes[1]` row 1, and so on. An instance's tokens are
    its `input_mask`'s (its padding comes last); its predictions those of non-zero weight."""
    rows, seq, width = len(row_sizes), shape.seq_len, shape.width
    names = [name for name in SEQUENCE_FEATURES if name in features]
    out = {
        name: np.zeros((rows, *dims), dtype)
        for name, (dtype, dims) in packed_layout(shape, names).items()
    }
    lengths = np.count_nonzero(features["input_mask"], axis=1)
    labels = np.asarray(features["next_sentence_labels"]).reshape(len(lengths), -1)[:, 0]
    instance = 0
    for row, size in enumerate(row_sizes):
        if size > shape.instances:
            raise ValueError(f"a packed row holds at most {shape.instances} instances, got {size}")
        start = predicted = 0
        for slot in range(size):
            length, end = int(lengths[instance]), start + int(lengths[instance])
            if end > seq:
                raise ValueError(f"row {row}: its instances hold more than {seq} tokens")
            for name in names:
                out[name][row, start:end] = features[name][instance, :length]
            out["position_ids"][row, start:end] = np.arange(length)
            out["instance_ids"][row, start:end] = slot + 1
            out["cls_positions"][row, slot] = start
            out["next_sentence_labels"][row, slot] = labels[instance]
            out["sop_weights"][row, slot] = 1.0
            weights = np.asarray(features["masked_lm_weights"][instance])
            kept = np.flatnonzero(weights)
            stop = predicted + len(kept)
            if stop > width:
                raise ValueError(f"row {row}: its instances hold more than {width} predictions")
            out["masked_lm_positions"][row, predicted:stop] = (
                features["masked_lm_positions"][instance, kept] + start
            )
            out["masked_lm_ids"][row, predicted:stop] = features["masked_lm_ids"][instance, kept]
            out["masked_lm_weights"][row, predicted:stop] = weights[kept]
            start, predicted, instance = end, stop, instance + 1
    return out
