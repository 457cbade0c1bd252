"""Rows' texts -> the model's inputs, with the fine-tune's own encoders (`model.tasks`): a
GLUE-style text or pair with the fine-tune's truncation, or overlapping windows of a long text (a
pair's second; `--windows`); SQuAD's question and context in document-stride windows; RACE's
article, question and options (one function per kind, `model.predict.kinds`). Each encoding
says which input row each model row belongs to (`owners`)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from albert.glue_tsv import GlueExample
from albert.race_json import RaceExample
from albert.squad_json import SquadExample
from albert.tokenization import AlbertTokenizer
from model.predict.task_info import TaskInfo
from model.tasks import squad_features
from model.tasks.encode import encode_glue, encode_pair, encode_race
from model.tasks.squad_features import window_starts

INPUTS = ("input_ids", "segment_ids", "input_mask")


@dataclass
class Encoded:
    """Model inputs (`arrays`, padded to the fine-tune's length) and the input row of each model
    row (`owners`); SQuAD's aligned examples and windows for decoding (`squad`)."""

    arrays: dict[str, np.ndarray]
    owners: np.ndarray
    squad: tuple | None = field(default=None)


def encode_text(
    info: TaskInfo,
    tokenizer: AlbertTokenizer,
    texts: list[dict[str, list[str]]],
    windows: bool = False,
    stride: int | None = None,
) -> Encoded:
    """The model inputs of classification, multi-label or regression rows (role `text`: one text
    or a pair), with `windows` each row's overlapping windows (a pair's second text slides)."""
    if windows:
        return _encode_windows(info, tokenizer, texts, stride)
    examples = [
        GlueExample(str(i), t["text"][0], t["text"][1] if len(t["text"]) > 1 else None, None)
        for i, t in enumerate(texts)
    ]
    length, truncation = info.max_seq_length, info.truncation
    arrays = encode_glue(tokenizer, examples, length, truncation, info.head_tokens)
    return Encoded(_inputs(arrays), np.arange(len(texts)))


def encode_choices(
    info: TaskInfo, tokenizer: AlbertTokenizer, texts: list[dict], windows=False, stride=None
) -> Encoded:
    """The model inputs of multiple-choice rows (`context`, `question`, `choices`); no windows."""
    examples = [
        RaceExample(str(i), "", t["context"][0], t["question"][0], tuple(t["choices"]), None)
        for i, t in enumerate(texts)
    ]
    arrays = encode_race(
        tokenizer, examples, info.max_seq_length, info.truncation, info.head_tokens
    )
    return Encoded(_inputs(arrays), np.arange(len(texts)))


def _inputs(arrays: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    return {name: arrays[name] for name in INPUTS}


def encode_spans(
    info: TaskInfo, tokenizer: AlbertTokenizer, texts: list[dict], windows=False, stride=None
) -> Encoded:
    """The model inputs of span rows (`question`, `context`): document-stride windows."""
    examples = [
        SquadExample(str(i), t["question"][0], t["context"][0]) for i, t in enumerate(texts)
    ]
    aligned, features = squad_features.prepare(
        tokenizer,
        examples,
        False,
        max_seq_length=info.max_seq_length,
        doc_stride=info.doc_stride,
        max_query_length=info.max_query_length,
    )
    owners = np.asarray([f.example_index for f in features], dtype=np.int64)
    arrays = _inputs(squad_features.features_to_arrays(features))
    return Encoded(arrays, owners, (aligned, features))


def _encode_windows(info: TaskInfo, tokenizer: AlbertTokenizer, texts, stride) -> Encoded:
    """Each row's text in overlapping windows: a single text slides; a pair's second text slides
    and its first is repeated in each window, cut to half the length where the pair does not fit
    (Hugging Face's `truncation="only_second"` with `return_overflowing_tokens`). A row that fits
    is one window, encoded as without windows."""
    length = info.max_seq_length
    rows, owners = [], []
    for index, t in enumerate(texts):
        pieces = [tokenizer.encode(text) for text in t["text"]]
        kept, sliding = (None, pieces[0]) if len(pieces) == 1 else pieces
        special = 2 if kept is None else 3
        if kept is not None and len(kept) + len(sliding) > length - special:
            kept = kept[: (length - special) // 2]
        width = length - special - (len(kept) if kept is not None else 0)
        for start, size in window_starts(len(sliding), width, stride or max(1, width // 2)):
            window = sliding[start : start + size]
            a, b = (window, None) if kept is None else (kept, window)
            rows.append(encode_pair(tokenizer, a, b, length))
            owners.append(index)
    ids, segments, mask = (np.asarray(column, dtype=np.int32) for column in zip(*rows))
    arrays = {"input_ids": ids, "segment_ids": segments, "input_mask": mask}
    return Encoded(arrays, np.asarray(owners, dtype=np.int64))
