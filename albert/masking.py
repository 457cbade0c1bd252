"""Whole-word n-gram masking for the masked-LM objective, as google-research/albert defines it.

Pure NumPy, no TensorFlow or Beam: the contract of one record's masks, which
`albert.batch_masking.mask_batch` gives record by record for the static masks of
`pipelines.tfrecords` and for dynamic masking at training time (`model.pretrain`). All randomness
comes from the `numpy.random.Generator` passed in.

The reference's semantics (`create_masked_lm_predictions`):
- a word is a piece that starts a word (`is_start_piece`) followed by the pieces that do not;
- the budget is `min(max_predictions_per_seq, max(1, round(num_tokens * masked_lm_prob)))`, where
  `num_tokens` counts [CLS] and [SEP] (every non-padding id);
- candidate n-grams start at each word in random order; n in 1..ngram is drawn with p proportional
  to 1/n (`favor_shorter_ngram`; reversed otherwise), shortened while it would exceed the budget,
  and skipped if it still does or if it overlaps an n-gram already chosen;
- each chosen piece becomes [MASK] 80%, itself 10%, a random piece 10%; positions are sorted.

Deliberate differences: special tokens ([CLS], [SEP], padding, [MASK]) are never masked and words
never run across them (the reference lets the first piece of segment B join the last word of A);
random replacements are never control symbols (the reference can draw <pad>, [CLS], [SEP] or
[MASK])."""

from __future__ import annotations

import dataclasses
import functools
import string
from typing import NamedTuple

import numpy as np

SPIECE_UNDERLINE = "\u2581"
FIRST_NORMAL_ID = 5  # ALBERT vocabularies: <pad> <unk> [CLS] [SEP] [MASK] are ids 0-4
_PUNCTUATION = frozenset(string.punctuation)
_START_CHARS_OK = frozenset(string.ascii_lowercase) | _PUNCTUATION


def is_start_piece(piece: str) -> bool:
    """The reference's `_is_start_piece_sp`: does this SentencePiece piece start a word?

    True if it starts with '▁' or '<', is one ASCII punctuation character, or has a character that
    is neither an ASCII letter nor ASCII punctuation (digits, accented or non-Latin characters).
    """
    return (
        piece.startswith((SPIECE_UNDERLINE, "<"))
        or piece in _PUNCTUATION
        or not all(char.lower() in _START_CHARS_OK for char in piece)
    )


def start_piece_table(pieces: list[str]) -> np.ndarray:
    """Boolean array over the vocabulary: `table[id]` is True if piece `id` starts a word."""
    return np.fromiter((is_start_piece(piece) for piece in pieces), dtype=bool, count=len(pieces))


@dataclasses.dataclass(frozen=True, eq=False)
class MaskingOptions:
    """How to mask. `replacement_ids` are the ids a random replacement is drawn from (no
    controls)."""

    replacement_ids: np.ndarray
    masked_lm_prob: float = 0.15
    max_predictions_per_seq: int = 20
    ngram: int = 3
    favor_shorter_ngram: bool = True
    mask_id: int = 4
    special_ids: tuple[int, ...] = (0, 2, 3, 4)  # <pad>, [CLS], [SEP], [MASK]: never masked

    def __post_init__(self):
        if self.ngram < 1:
            raise ValueError(f"ngram must be at least 1, got {self.ngram}")
        if len(self.replacement_ids) == 0:
            raise ValueError("replacement_ids is empty")
        weights = 1.0 / np.arange(1, self.ngram + 1)
        if not self.favor_shorter_ngram:
            weights = weights[::-1]
        cdf = np.cumsum(weights / weights.sum())
        cdf[-1] = 1.0
        object.__setattr__(self, "ngram_cdf", cdf)

    @classmethod
    def for_vocabulary(cls, vocab_size: int, is_control, **kwargs) -> MaskingOptions:
        """Options whose random replacements are every id for which `is_control(id)` is False."""
        ids = np.array([i for i in range(vocab_size) if not is_control(i)], dtype=np.int64)
        return cls(replacement_ids=ids, **kwargs)


class Masked(NamedTuple):
    masked_ids: np.ndarray  # the input with replacements applied (same shape and dtype as ids)
    positions: np.ndarray  # int64, sorted
    labels: np.ndarray  # int64, the original ids at `positions`


def num_to_predict(num_tokens: int, options: MaskingOptions) -> int:
    """The reference's prediction budget for a sequence of `num_tokens` (incl. [CLS]/[SEP])."""
    if options.masked_lm_prob == 0:
        return 0
    return min(options.max_predictions_per_seq, max(1, round(num_tokens * options.masked_lm_prob)))


def word_spans(is_word_start: np.ndarray, maskable: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(starts, ends) of the whole words among maskable pieces; a word never crosses a special
    token."""
    previous_maskable = np.concatenate(([False], maskable[:-1]))
    starts_mask = maskable & (is_word_start | ~previous_maskable)
    starts = np.flatnonzero(starts_mask)
    boundaries = np.flatnonzero(starts_mask | ~maskable)
    boundaries = np.concatenate((boundaries, [len(maskable)]))
    ends = boundaries[np.searchsorted(boundaries, starts, side="right")]
    return starts, ends


def select_ngrams(
    starts: np.ndarray,
    ends: np.ndarray,
    budget: int,
    rng: np.random.Generator,
    options: MaskingOptions,
) -> list[tuple[int, int]]:
    """The chosen n-grams as (first word, number of words), in the order they were chosen."""
    num_words = len(starts)
    if num_words == 0 or budget <= 0:
        return []
    order = rng.permutation(num_words).tolist()
    drawn = (np.searchsorted(options.ngram_cdf, rng.random(num_words), side="right") + 1).tolist()
    cumulative = np.concatenate(([0], np.cumsum(ends - starts))).tolist()
    covered = bytearray(num_words)
    chosen: list[tuple[int, int]] = []
    count = 0
    for first in order:
        if count >= budget:
            break
        n = min(drawn[first], num_words - first)
        while n > 0 and count + cumulative[first + n] - cumulative[first] > budget:
            n -= 1
        if n == 0 or any(covered[first : first + n]):
            continue
        covered[first : first + n] = b"\x01" * n
        count += cumulative[first + n] - cumulative[first]
        chosen.append((first, n))
    return chosen


def mask_instance(
    ids: np.ndarray,
    is_word_start: np.ndarray,
    rng: np.random.Generator,
    options: MaskingOptions,
    ngram_counts: np.ndarray | None = None,
) -> Masked:
    """Mask one sequence (padding allowed) by whole-word n-gram masking.

    `ids`: int array [T]; `is_word_start`: bool array [T] (the `token_boundary` feature).
    `ngram_counts` (int array of length `options.ngram + 1`), if given, is incremented at the number
    of words of each chosen n-gram."""
    ids = np.asarray(ids)
    maskable = np.ones(len(ids), dtype=bool)
    for special in options.special_ids:
        maskable &= ids != special
    budget = num_to_predict(int(np.count_nonzero(ids != 0)), options)
    starts, ends = word_spans(np.asarray(is_word_start, dtype=bool), maskable)
    chosen = select_ngrams(starts, ends, budget, rng, options)
    if not chosen:
        empty = np.zeros(0, dtype=np.int64)
        return Masked(ids.copy(), empty, empty)
    positions = np.concatenate(
        [np.arange(starts[first], ends[first + n - 1]) for first, n in chosen]
    )
    # An n-gram's words are consecutive among words but may straddle a special token: drop it.
    positions = np.sort(positions[maskable[positions]]).astype(np.int64)
    if ngram_counts is not None:
        for _, n in chosen:
            ngram_counts[n] += 1
    labels = ids[positions].astype(np.int64)
    masked_ids = ids.copy()
    choice = rng.random(len(positions))
    keep = rng.random(len(positions)) < 0.5
    random_ids = options.replacement_ids[
        rng.integers(len(options.replacement_ids), size=len(positions))
    ]
    replacement = np.where(choice < 0.8, options.mask_id, np.where(keep, labels, random_ids))
    masked_ids[positions] = replacement
    return Masked(masked_ids, positions, labels)


@functools.lru_cache(maxsize=16)
def albert_options(vocab_size, max_predictions_per_seq, masked_lm_prob, ngram, favor_shorter_ngram):
    """The options of an ALBERT vocabulary (ids 0-4 controls, the rest normal pieces), cached."""
    return MaskingOptions(
        replacement_ids=np.arange(FIRST_NORMAL_ID, vocab_size, dtype=np.int64),
        masked_lm_prob=masked_lm_prob,
        max_predictions_per_seq=max_predictions_per_seq,
        ngram=ngram,
        favor_shorter_ngram=favor_shorter_ngram,
    )


def mask_tokens(
    ids,
    token_boundary,
    rng: np.random.Generator,
    *,
    vocab_size: int,
    max_predictions_per_seq: int = 20,
    masked_lm_prob: float = 0.15,
    ngram: int = 3,
    favor_shorter_ngram: bool = True,
) -> Masked:
    """`mask_instance` for an ALBERT vocabulary (ids 0-4 = <pad> <unk> [CLS] [SEP] [MASK], the rest
    normal pieces): the trainer's entry point for dynamic masking of a record's input_ids and
    token_boundary."""
    options = albert_options(
        vocab_size, max_predictions_per_seq, masked_lm_prob, ngram, favor_shorter_ngram
    )
    return mask_instance(
        np.asarray(ids, dtype=np.int64), np.asarray(token_boundary, dtype=bool), rng, options
    )
