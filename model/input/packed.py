"""Packed batches of an epoch's records, for both inputs (Grain and tf.data), without TensorFlow or
Grain: the rows of `model.input.packing` over the epoch's record order, batched, and a batch of
rows decoded, masked and packed.

An epoch's packed batches (`packed_batches`): the positioned records of the epoch
(`model.input.epoch_order`, after the window shuffle) in that order, each with its real tokens
(`input_mask`) and its masked-LM prediction budget (static data: its predictions; dynamic masking:
the reference's budget for its length, `albert.masking.num_to_predict`), go through
`packing.packed_rows`; consecutive rows make a batch (`PackedBatch`), the remainder dropped.
Decoding (`PackedDecoder`) masks each record (dynamic masking) as the unpacked input does, with
the same `BatchDecoder`: record i of epoch e with the generator [seed, e, i]; then it lays the rows
out (`packing.pack_rows`).
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from albert.errors import StageError
from albert.masking import num_to_predict
from albert.pretraining_example import INT_FEATURES_PRED, INT_FEATURES_SEQ
from model.input import packing
from model.input.epoch_order import fixed_batches
from model.input.records import DataSpec, DynamicMasker, decode_record


class Decode:
    """(path, index, record) -> the example tf.data's `parse_fn` gives: int32 features, float32
    masked_lm_weights, fixed lengths checked (StageError naming the record otherwise)."""

    def __init__(self, spec: DataSpec):
        seq, preds = spec.max_seq_length, spec.max_predictions_per_seq
        self.lengths = {name: seq for name in INT_FEATURES_SEQ} | {"next_sentence_labels": 1}
        if spec.masking != "dynamic":
            self.lengths |= {name: preds for name in (*INT_FEATURES_PRED, "masked_lm_weights")}

    def __call__(self, path: str, index: int, record: bytes) -> dict:
        features = decode_record(path, index, record, self.lengths)
        example = {}
        for name, length in self.lengths.items():
            values = features.get(name)
            if values is None or len(values) != length:
                found = "absent" if values is None else f"of length {len(values)}"
                raise StageError(
                    f"{path}: record {index}: feature {name} is {found}, expected length {length}"
                )
            example[name] = values if name == "masked_lm_weights" else values.astype(np.int32)
        return example


def spec_shape(spec: DataSpec, instances: int) -> packing.PackingShape:
    """The packed row of `spec`'s data with at most `instances` instances."""
    prob = float(spec.metadata.get("masked_lm_prob", 0.15))
    return packing.packing_shape(spec.max_seq_length, spec.max_predictions_per_seq, instances, prob)


class PackedBatch(list):
    """A batch of packed rows: a list of rows, each a list of positioned records (position in the
    epoch, (path, index, record)), with the `shape` they are packed in."""

    def __init__(self, rows, shape: packing.PackingShape):
        super().__init__(rows)
        self.shape = shape


class Budgets:
    """A positioned record -> (it, its real tokens, its prediction budget), for `packed_rows`."""

    def __init__(self, spec: DataSpec):
        self.dynamic = spec.masking == "dynamic"
        self.options = DynamicMasker(spec, 0, 0).options if self.dynamic else None
        self.names = ("input_mask",) if self.dynamic else ("input_mask", "masked_lm_weights")

    def __call__(self, item):
        path, index, record = item[1]
        features = decode_record(path, index, record, self.names)
        tokens = int(np.count_nonzero(features["input_mask"]))
        if self.dynamic:
            return item, tokens, num_to_predict(tokens, self.options)
        return item, tokens, int(np.count_nonzero(features["masked_lm_weights"]))


def packed_batches(
    positioned: Iterator, size: int, shape: packing.PackingShape, budgets: Budgets
) -> Iterator[PackedBatch]:
    """Batches of `size` packed rows of the positioned records in their order (see the module
    doc)."""
    rows = packing.packed_rows(map(budgets, positioned), shape, packing.OPEN_ROWS)
    return (PackedBatch(batch, shape) for batch in fixed_batches(rows, size))


class BatchDecoder:
    """(epoch, positioned records, edge) -> their examples (`Decode`) stacked into a batch, the
    sequence features cut to their first `edge` tokens when given (a length bucket's), and with
    dynamic masking masked by `DynamicMasker` as record `position` of epoch `epoch`."""

    def __init__(self, spec: DataSpec, seed: int):
        self.spec, self.seed, self.decode, self.masker = spec, seed, Decode(spec), None

    def __call__(self, epoch: int, records, edge: int | None = None) -> dict:
        examples = [self.decode(*element) for _, element in records]
        batch = {name: np.stack([example[name] for example in examples]) for name in examples[0]}
        if edge is not None:  # contiguous: it travels in shared memory as the other features do
            batch |= {
                name: np.ascontiguousarray(batch[name][:, :edge]) for name in INT_FEATURES_SEQ
            }
        if self.spec.masking == "dynamic":
            if self.masker is None or self.masker.epoch != epoch:
                self.masker = DynamicMasker(self.spec, self.seed, epoch)
            ids, positions, labels, weights = self.masker(
                [position for position, _ in records], batch["input_ids"], batch["token_boundary"]
            )
            batch.update(
                input_ids=ids,
                masked_lm_positions=positions,
                masked_lm_ids=labels,
                masked_lm_weights=weights,
            )
        return batch


class PackedDecoder:
    """(epoch, rows of positioned records, shape) -> the packed batch (`packing.pack_rows`) of the
    rows' records decoded and masked together (`BatchDecoder`)."""

    def __init__(self, spec: DataSpec, seed: int):
        self.batch = BatchDecoder(spec, seed)

    def __call__(self, epoch: int, rows, shape: packing.PackingShape) -> dict:
        batch = self.batch(epoch, [record for row in rows for record in row])
        return packing.pack_rows(batch, [len(row) for row in rows], shape)
