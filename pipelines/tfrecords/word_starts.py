"""Which pieces start a word, for whole-word masking (the `token_boundary` feature).

`word_segmenter` "none" is the reference's rule, a function of the piece alone
(`albert.masking.is_start_piece`: every piece with a non-ASCII character starts a word, so in
Japanese or Chinese a "whole word" is one piece). The other segmenters find the words on the
sentence's text (after the tokenizer's preprocessing), and a piece starts a word when its first
non-space character is where a word begins; pieces that run across a word's end merge the words
they touch into one masking unit:
- "whitespace": words are the text's space-separated tokens (Korean, Hindi, Arabic, Vietnamese);
- "jieba" (Chinese) and "tinysegmenter" (Japanese): the words of those segmenters
  (`pipelines.common.word_segmenters`).
With a segmenter, the bare "▁" piece (SentencePiece's space before a piece without one) is never a
word of its own: it starts the word of the piece after it, or, where a special token or the end
follows, ends the word before it (`attach_bare_underlines`). The reference's rule keeps it a word,
as English reference parity needs (its token_boundary is a function of the piece).

Word starts travel with the ids from `encode` to the records as bit `WORD_START_FLAG` of each id
(`flag_word_starts`, `split_word_start_flags`), so instance creation, packing and truncation carry
them unchanged; vocabularies stay below 2**30 pieces.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from albert import masking
from pipelines.common.word_segmenters import SEGMENTERS
from pipelines.tfrecords.config import WordSegmenter

WORD_START_FLAG = 1 << 30
"""The bit of an id that marks a word start between `encode` and the records (segmenters only)."""


def word_bounds(text: str, segmenter: WordSegmenter) -> tuple[set[int], set[int]]:
    """The character offsets where the words of `text` begin and end, by `segmenter` (not
    "none"). Whitespace is no word."""
    if segmenter == "whitespace":
        words = text.split(" ")
    else:
        words = SEGMENTERS[segmenter]()(text)
    begins, ends, position = set(), set(), 0
    for word in words:
        found = text.find(word, position) if word else -1
        if found < 0:
            continue
        position = found + len(word)
        if word.strip():
            begins.add(found + len(word) - len(word.lstrip()))
            ends.add(found + len(word.rstrip()))
    return begins, ends


def piece_spans(pieces) -> list[tuple[int, int]]:
    """(first non-space character, end) of each SentencePiece piece (`immutable_proto` pieces)
    in the encoded text; a piece of whitespace alone spans nothing (begin = end)."""
    spans = []
    for piece in pieces:
        surface = piece.surface
        stripped = len(surface) - len(surface.lstrip())
        begin = min(piece.begin + stripped, piece.end)
        spans.append((begin, piece.end))
    return spans


def encode_with_word_starts(
    tokenizer, expansions: dict[int, list[int]], line: str, segmenter: WordSegmenter
) -> tuple[np.ndarray, np.ndarray]:
    """`tokenizer.encode(line)` (int64 ids) and which of them start a `segmenter` word (bool).

    The ids are SentencePiece's on the preprocessed text, each expanded by the reference's
    digit-comma rule (`expansions`: `AlbertTokenizer.digit_comma_expansions`), as the in-graph
    tokenizer does; an expanded piece's first id keeps its start, the rest continue its word. A bare
    "▁" starts the word after it (`attach_bare_underlines`)."""
    text = tokenizer.preprocess(line)
    pieces = tokenizer.sp.encode(text, out_type="immutable_proto").pieces
    begins, _ = word_bounds(text, segmenter)
    ids: list[int] = []
    starts: list[bool] = []
    for piece, (begin, _) in zip(pieces, piece_spans(pieces)):
        expanded = expansions.get(piece.id, [piece.id])
        ids.extend(expanded)
        starts.append(begin in begins)
        starts.extend([False] * (len(expanded) - 1))
    ids_array = np.asarray(ids, dtype=np.int64)
    starts_array = attach_bare_underlines(
        ids_array[None],
        np.asarray(starts, dtype=bool)[None],
        np.asarray([len(ids)]),
        bare_underline_id(tokenizer),
        (),
    )[0]
    return ids_array, starts_array


def flag_word_starts(ids: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """`ids` with `WORD_START_FLAG` set where `starts`."""
    return np.where(starts, ids | WORD_START_FLAG, ids)


def split_word_start_flags(ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The inverse of `flag_word_starts`: (ids, starts)."""
    return ids & ~WORD_START_FLAG, (ids & WORD_START_FLAG) != 0


def attach_bare_underlines(
    ids: np.ndarray, starts: np.ndarray, lengths: np.ndarray, underline_id: int, specials
) -> np.ndarray:
    """`starts` [B, T] where no bare "▁" piece (`underline_id`) is a word alone: it starts the
    word of the normal piece after it, or continues the word before it where none follows (a
    special token, the end). A bare "▁" between two special tokens stays alone."""
    inside = np.arange(ids.shape[1]) < lengths[:, None]
    normal = inside & ~np.isin(ids, list(specials))
    bare = normal & (ids == underline_id)
    next_normal = np.zeros_like(normal)
    next_normal[:, :-1] = normal[:, 1:] & ~bare[:, 1:]
    starts = starts.copy()
    starts[:, 1:] &= ~(bare[:, :-1] & next_normal[:, :-1])
    starts[bare & next_normal] = True
    starts[bare & ~next_normal] = False
    return starts


def bare_underline_id(tokenizer) -> int:
    """The id of the bare "▁" piece, or -1 where the vocabulary has none."""
    piece_id = tokenizer.sp.piece_to_id(masking.SPIECE_UNDERLINE)
    return piece_id if tokenizer.sp.id_to_piece(piece_id) == masking.SPIECE_UNDERLINE else -1


def masked_span_boundary_share(
    tokenizer,
    lines: Sequence[str],
    segmenter: WordSegmenter,
    judge: WordSegmenter,
    seed: int = 0,
    masked_lm_prob: float = 0.15,
    ngram: int = 3,
) -> float:
    """The share of masked spans (runs of consecutive masked pieces) that begin where a `judge`
    word begins and end where one ends, when each line, as [CLS] line [SEP], is masked with the
    word starts of `segmenter` ("none": the reference's rule). A bare "▁" masked alone is off.
    Deterministic for a seed; the measure of whole-word masking for scripts without spaces."""
    options = masking.MaskingOptions.for_vocabulary(
        tokenizer.vocab_size,
        tokenizer.is_control,
        masked_lm_prob=masked_lm_prob,
        ngram=ngram,
        mask_id=tokenizer.mask_id,
    )
    table = masking.start_piece_table(tokenizer.sp.id_to_piece(list(range(tokenizer.vocab_size))))
    rng = np.random.Generator(np.random.PCG64(seed))
    underline = bare_underline_id(tokenizer)
    on = total = 0
    for line in lines:
        text = tokenizer.preprocess(line)
        pieces = tokenizer.sp.encode(text, out_type="immutable_proto").pieces
        if not pieces:
            continue
        ids = np.asarray([tokenizer.cls_id, *(p.id for p in pieces), tokenizer.sep_id])
        if segmenter == "none":
            starts = table[ids]
        else:
            begins, _ = word_bounds(text, segmenter)
            spans = piece_spans(pieces)
            starts = np.asarray([True, *(b in begins for b, _ in spans), True])
            starts = attach_bare_underlines(
                ids[None], starts[None], np.asarray([len(ids)]), underline, options.special_ids
            )[0]
        positions = masking.mask_instance(ids, starts, rng, options).positions
        judge_begins, judge_ends = word_bounds(text, judge)
        spans = [(0, 0), *piece_spans(pieces), (0, 0)]
        runs = np.split(positions, np.flatnonzero(np.diff(positions) != 1) + 1)
        for run in runs:
            if len(run):
                total += 1
                begin, end = spans[run[0]][0], spans[run[-1]][1]
                on += begin < end and begin in judge_begins and end in judge_ends
    return on / total if total else 1.0
