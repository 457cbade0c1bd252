"""Examples -> padded model inputs: `[CLS] a [SEP] (b [SEP])` for GLUE, one such row per option
for RACE (`[CLS] article [SEP] question+option [SEP]`), with Sun et al.'s truncation strategies."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol

import numpy as np

from albert.glue_tsv import GlueExample
from albert.race_json import RaceExample
from model.tasks.truncation import Truncation, truncate_pair


class IdTokenizer(Protocol):  # albert.tokenization.AlbertTokenizer
    cls_id: int
    sep_id: int
    pad_id: int

    def encode(self, text: str) -> list[int]: ...


MAX_QA_LENGTH = 128
"""RACE: the pieces a question completed by an option keeps (its last), before the pair's cut."""


def encode_pair(
    tokenizer: IdTokenizer,
    a: list[int],
    b: list[int] | None,
    max_seq_length: int,
    truncation: Truncation = "head",
    head_tokens: int = 128,
) -> tuple[list[int], list[int], list[int]]:
    """(input_ids, segment_ids, input_mask), padded to `max_seq_length`."""
    special = 3 if b is not None else 2
    a, b = truncate_pair(a, b, max_seq_length - special, truncation, head_tokens)
    ids = [tokenizer.cls_id, *a, tokenizer.sep_id]
    segments = [0] * len(ids)
    if b is not None:
        ids += [*b, tokenizer.sep_id]
        segments += [1] * (len(b) + 1)
    mask = [1] * len(ids)
    pad = max_seq_length - len(ids)
    return ids + [tokenizer.pad_id] * pad, segments + [0] * pad, mask + [0] * pad


def encode_glue(
    tokenizer: IdTokenizer,
    examples: Iterable[GlueExample],
    max_seq_length: int,
    truncation: Truncation = "head",
    head_tokens: int = 128,
) -> dict[str, np.ndarray]:
    """Inputs (int32 [N, T]) and `labels` (int32, float32 for regression, -1 / nan when absent)."""
    rows, labels = [], []
    for example in examples:
        b = tokenizer.encode(example.text_b) if example.text_b is not None else None
        rows.append(
            encode_pair(
                tokenizer,
                tokenizer.encode(example.text_a),
                b,
                max_seq_length,
                truncation,
                head_tokens,
            )
        )
        labels.append(example.label)
    return _arrays(rows, labels, max_seq_length)


def encode_race(
    tokenizer: IdTokenizer,
    examples: Iterable[RaceExample],
    max_seq_length: int,
    truncation: Truncation = "head",
    head_tokens: int = 128,
    max_qa_length: int = MAX_QA_LENGTH,
) -> dict[str, np.ndarray]:
    """Inputs [N, 4, T]; each option's question+option is cut to `max_qa_length` pieces first."""
    rows, labels = [], []
    for example in examples:
        article = tokenizer.encode(example.article)
        options = [
            encode_pair(
                tokenizer,
                article,
                tokenizer.encode(text)[-max_qa_length:],
                max_seq_length,
                truncation,
                head_tokens,
            )
            for text in example.option_texts()
        ]
        rows.append(tuple(list(column) for column in zip(*options)))
        labels.append(example.label)
    return _arrays(rows, labels, max_seq_length)


def _arrays(rows, labels, max_seq_length) -> dict[str, np.ndarray]:
    regression = any(isinstance(label, float) for label in labels)
    if regression:
        label_array = np.asarray([np.nan if v is None else v for v in labels], dtype=np.float32)
    else:
        label_array = np.asarray([-1 if v is None else v for v in labels], dtype=np.int32)
    if not rows:
        empty = np.zeros((0, max_seq_length), dtype=np.int32)
        return {
            "input_ids": empty,
            "segment_ids": empty,
            "input_mask": empty,
            "labels": label_array,
        }
    ids, segments, mask = zip(*rows)
    return {
        "input_ids": np.asarray(ids, dtype=np.int32),
        "segment_ids": np.asarray(segments, dtype=np.int32),
        "input_mask": np.asarray(mask, dtype=np.int32),
        "labels": label_array,
    }
