"""SQuAD features: answer alignment to SentencePiece pieces, document-stride windows, span decoding.

Alignment. The context is split on whitespace into words and each word is tokenized on its own
(SentencePiece splits on whitespace too, so the pieces are those of the whole text). Each piece gets
the character span it covers in the *original* context: exact when the word's pieces, without the
`▁` marker, spell the preprocessed word with the same length as the original word; otherwise (NFKD
ligatures and fractions) every piece of the word spans the whole word (`fallback_words`). An answer
maps to the pieces containing its first and last character; `boundary_misaligned` counts answers
whose boundaries fall inside a piece, `offset_repaired` answers whose `answer_start` did not point
at their text but the text was found elsewhere in the context (nearest occurrence), and
`answer_not_found` answers whose text is nowhere in the context (such training questions are left
out, and counted). Decoding (`model.tasks.squad_decode`) maps a piece span back to the original
characters, so predictions are exact substrings of the context.

Windows follow the reference: `[CLS] question [SEP] window [SEP]`, at most `max_query_length`
question pieces, windows of the remaining length starting every `doc_stride` pieces, each piece
scored in the window where it has the most context.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from albert.errors import ConfigError
from albert.squad_json import SquadExample

SPIECE_UNDERLINE = "\u2581"


class PieceTokenizer(Protocol):  # albert.tokenization.AlbertTokenizer
    cls_id: int
    sep_id: int
    pad_id: int

    def tokenize(self, text: str) -> list[str]: ...
    def piece_to_id(self, piece: str) -> int: ...
    def preprocess(self, text: str) -> str: ...


@dataclass
class ContextPieces:
    """A context's pieces, their ids and the [start, end) character span of each in the context."""

    text: str
    pieces: list[str]
    ids: list[int]
    spans: list[tuple[int, int]]
    fallback_words: int = 0


def tokenize_with_offsets(tokenizer: PieceTokenizer, text: str) -> ContextPieces:
    pieces: list[str] = []
    spans: list[tuple[int, int]] = []
    fallback = 0
    for match in re.finditer(r"\S+", text):
        word, start, end = match.group(), match.start(), match.end()
        word_pieces = tokenizer.tokenize(word)
        surfaces = [p.replace(SPIECE_UNDERLINE, "") for p in word_pieces]
        exact = sum(map(len, surfaces)) == len(word) and "".join(surfaces) == tokenizer.preprocess(
            word
        ).replace(" ", "")
        cursor = start
        for piece, surface in zip(word_pieces, surfaces):
            pieces.append(piece)
            if exact:
                spans.append((cursor, cursor + len(surface)))
                cursor += len(surface)
            else:
                spans.append((start, end))
        fallback += int(not exact and bool(word_pieces))
    ids = [tokenizer.piece_to_id(p) for p in pieces]
    return ContextPieces(text, pieces, ids, spans, fallback)


def locate_answer(context: str, text: str, start: int) -> int | None:
    """The answer's character start: `start` when it points at `text`, else the nearest
    occurrence."""
    if context[start : start + len(text)] == text:
        return start
    occurrences = [m.start() for m in re.finditer(re.escape(text), context)] if text else []
    if not occurrences:
        return None
    return min(occurrences, key=lambda o: abs(o - start))


def align_span(ctx: ContextPieces, start_char: int, end_char: int) -> tuple[int, int, bool] | None:
    """(first piece, last piece, exact) covering characters [start_char, end_char) of the
    context."""
    covering = [
        i for i, (s, e) in enumerate(ctx.spans) if e > start_char and s < end_char and e > s
    ]
    if not covering:
        return None
    first, last = covering[0], covering[-1]
    exact = ctx.spans[first][0] == start_char and ctx.spans[last][1] == end_char
    return first, last, exact


@dataclass
class AlignedExample:
    example: SquadExample
    context: ContextPieces
    answer_pieces: tuple[int, int] | None  # first training answer's piece span; None: no answer


def align_example(
    tokenizer: PieceTokenizer,
    example: SquadExample,
    counts: dict[str, int],
    context: ContextPieces | None = None,
) -> AlignedExample | None:
    """Tokenize the context (unless given) and align the first answer; None when its text is not in
    the context."""
    if context is None or context.text != example.context:
        context = tokenize_with_offsets(tokenizer, example.context)
        counts["fallback_words"] = counts.get("fallback_words", 0) + context.fallback_words
    if example.is_impossible or not example.answers:
        return AlignedExample(example, context, None)
    answer = example.answers[0]
    start = locate_answer(example.context, answer.text, answer.start)
    counts["answers"] = counts.get("answers", 0) + 1
    if start is None:
        counts["answer_not_found"] = counts.get("answer_not_found", 0) + 1
        return None
    if start != answer.start:
        counts["offset_repaired"] = counts.get("offset_repaired", 0) + 1
    aligned = align_span(context, start, start + len(answer.text))
    if aligned is None:
        counts["answer_not_found"] = counts.get("answer_not_found", 0) + 1
        return None
    first, last, exact = aligned
    counts["boundary_misaligned" if not exact else "exact_aligned"] = (
        counts.get("boundary_misaligned" if not exact else "exact_aligned", 0) + 1
    )
    return AlignedExample(example, context, (first, last))


@dataclass
class SquadFeature:
    example_index: int
    input_ids: list[int]
    input_mask: list[int]
    segment_ids: list[int]
    token_to_piece: list[int]  # position -> context piece index, -1 outside the context
    is_max_context: list[bool]
    start_position: int = 0  # 0 ([CLS]) when the window holds no answer
    end_position: int = 0
    qas_id: str = ""


def window_starts(num_pieces: int, window: int, stride: int) -> list[tuple[int, int]]:
    """(start, length) of each document window, as the reference's `doc_spans`."""
    spans, start = [], 0
    while True:
        length = min(num_pieces - start, window)
        spans.append((start, length))
        if start + length >= num_pieces:
            return spans
        start += min(length, stride)


def max_context(spans: Sequence[tuple[int, int]], span_index: int, position: int) -> bool:
    """Whether window `span_index` gives piece `position` the most context (reference rule)."""
    best_score, best_index = None, None
    for index, (start, length) in enumerate(spans):
        end = start + length - 1
        if position < start or position > end:
            continue
        score = min(position - start, end - position) + 0.01 * length
        if best_score is None or score > best_score:
            best_score, best_index = score, index
    return best_index == span_index


def build_features(
    tokenizer: PieceTokenizer,
    aligned: AlignedExample,
    example_index: int,
    max_seq_length: int = 384,
    doc_stride: int = 128,
    max_query_length: int = 64,
) -> list[SquadFeature]:
    """The windows of one aligned example, padded to `max_seq_length`."""
    query = [tokenizer.piece_to_id(p) for p in tokenizer.tokenize(aligned.example.question)]
    query = query[:max_query_length]
    window = max_seq_length - len(query) - 3
    if window <= 0:
        raise ConfigError(f"max_seq_length {max_seq_length} leaves no room for the context")
    ctx = aligned.context
    spans = window_starts(len(ctx.ids), window, doc_stride)
    features = []
    for span_index, (start, length) in enumerate(spans):
        ids = [tokenizer.cls_id, *query, tokenizer.sep_id]
        segments = [0] * len(ids)
        token_to_piece = [-1] * len(ids)
        is_max = [False] * len(ids)
        offset = len(ids)
        for i in range(start, start + length):
            ids.append(ctx.ids[i])
            segments.append(1)
            token_to_piece.append(i)
            is_max.append(max_context(spans, span_index, i))
        ids.append(tokenizer.sep_id)
        segments.append(1)
        token_to_piece.append(-1)
        is_max.append(False)
        start_position = end_position = 0
        if aligned.answer_pieces is not None:
            first, last = aligned.answer_pieces
            if first >= start and last < start + length:
                start_position, end_position = first - start + offset, last - start + offset
        mask = [1] * len(ids)
        pad = max_seq_length - len(ids)
        features.append(
            SquadFeature(
                example_index,
                ids + [tokenizer.pad_id] * pad,
                mask + [0] * pad,
                segments + [0] * pad,
                token_to_piece + [-1] * pad,
                is_max + [False] * pad,
                start_position,
                end_position,
                aligned.example.qas_id,
            )
        )
    return features


def features_to_arrays(features: Sequence[SquadFeature]) -> dict[str, np.ndarray]:
    """Model inputs and span labels as int32 arrays."""
    return {
        "input_ids": np.asarray([f.input_ids for f in features], dtype=np.int32),
        "input_mask": np.asarray([f.input_mask for f in features], dtype=np.int32),
        "segment_ids": np.asarray([f.segment_ids for f in features], dtype=np.int32),
        "start_positions": np.asarray([f.start_position for f in features], dtype=np.int32),
        "end_positions": np.asarray([f.end_position for f in features], dtype=np.int32),
    }


def prepare(
    tokenizer: PieceTokenizer,
    examples: Iterable[SquadExample],
    training: bool,
    max_seq_length: int = 384,
    doc_stride: int = 128,
    max_query_length: int = 64,
    counts: dict[str, int] | None = None,
) -> tuple[list[AlignedExample], list[SquadFeature]]:
    """Align and window examples. For evaluation, unalignable answers are kept (only gold text is
    needed to score); for training they are left out and counted."""
    counts = counts if counts is not None else {}
    aligned_examples, features = [], []
    context = None  # the questions of a paragraph share its tokenized context
    for example in examples:
        aligned = align_example(tokenizer, example, counts, context)
        if aligned is None:
            if training:
                continue
            aligned = AlignedExample(
                example, tokenize_with_offsets(tokenizer, example.context), None
            )
        context = aligned.context
        if not training:
            aligned.answer_pieces = None
        index = len(aligned_examples)
        aligned_examples.append(aligned)
        features.extend(
            build_features(tokenizer, aligned, index, max_seq_length, doc_stride, max_query_length)
        )
    counts["examples"] = len(aligned_examples)
    counts["features"] = len(features)
    return aligned_examples, features
