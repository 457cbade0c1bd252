"""Whole-word n-gram masking of a whole batch at once (pure NumPy), record by record identical to
`albert.masking.mask_instance`.

Contract: row `b` of `mask_batch(ids, is_word_start, generators, options)` holds exactly what
`mask_instance(ids[b], is_word_start[b], generators[b], options)` gives (same positions, labels and
replacements), and leaves `generators[b]` in the same state. Each row needs its own generator: the
per-record draws (a permutation and uniforms before the n-gram selection, uniforms and replacement
ids after it) are made per row; the selection itself runs over all rows together, one candidate
n-gram of every row per step, instead of a Python loop per record and candidate.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

from albert.masking import MaskingOptions


class BatchMasked(NamedTuple):
    masked_ids: np.ndarray  # [B, T], the input with replacements applied (ids' dtype)
    positions: np.ndarray  # int64 [B, P], sorted, zero-padded after `counts[b]`
    labels: np.ndarray  # int64 [B, P], the original ids at `positions`, zero-padded
    counts: np.ndarray  # int64 [B], the number of masked positions of each row


def prediction_budgets(ids: np.ndarray, options: MaskingOptions) -> np.ndarray:
    """`masking.num_to_predict` of every row: non-padding ids count, [CLS] and [SEP] included."""
    if options.masked_lm_prob == 0:
        return np.zeros(len(ids), np.int64)
    expected = np.rint(np.count_nonzero(ids != 0, axis=1) * options.masked_lm_prob)
    return np.minimum(options.max_predictions_per_seq, np.maximum(1, expected)).astype(np.int64)


def batch_word_spans(is_word_start: np.ndarray, maskable: np.ndarray):
    """`masking.word_spans` of every row: (word start flags [B, T], word count [B], word index of
    each token [B, T], start position [B, W] and length in tokens [B, W] of each word)."""
    batch, length = maskable.shape
    previous = np.zeros_like(maskable)
    previous[:, 1:] = maskable[:, :-1]
    starts_mask = maskable & (is_word_start | ~previous)
    boundary = np.where(starts_mask | ~maskable, np.arange(length), length)
    next_boundary = np.full((batch, length + 1), length)
    next_boundary[:, :-1] = np.minimum.accumulate(boundary[:, ::-1], axis=1)[:, ::-1]
    rows, starts = np.nonzero(starts_mask)
    word_counts = np.count_nonzero(starts_mask, axis=1)
    offsets = np.concatenate(([0], np.cumsum(word_counts)[:-1]))
    slots = np.arange(len(rows)) - offsets[rows]
    width = int(word_counts.max(initial=0))
    word_starts = np.zeros((batch, width), np.int64)
    word_lengths = np.zeros((batch, width), np.int64)
    word_starts[rows, slots] = starts
    word_lengths[rows, slots] = next_boundary[rows, starts + 1] - starts
    word_of_token = np.cumsum(starts_mask, axis=1) - 1
    return word_counts, word_of_token, word_starts, word_lengths, (rows, slots)


def _select_words(order, drawn, word_counts, word_lengths, budgets, options, ngram_counts):
    """The greedy n-gram choice of `masking.select_ngrams` for all rows in lockstep: step k tries
    each row's k-th candidate. Returns the chosen words as a bool array [B, >= W + 1]."""
    batch, width = order.shape
    ngram = options.ngram
    cumulative = np.zeros((batch, width + ngram + 1), np.int64)
    cumulative[:, 1 : width + 1] = np.cumsum(word_lengths, axis=1)
    cumulative[:, width + 1 :] = cumulative[:, width : width + 1]
    covered = np.zeros((batch, width + ngram), bool)
    count = np.zeros(batch, np.int64)
    rows = np.arange(batch)
    sizes = np.arange(1, ngram + 1)
    for step in range(width):
        active = (step < word_counts) & (count < budgets)
        if not active.any():
            break
        first = np.where(active, order[:, step], 0)
        wanted = np.minimum(drawn[rows, first], word_counts - first)
        spans = cumulative[rows[:, None], first[:, None] + sizes] - cumulative[rows, first][:, None]
        fits = (sizes <= wanted[:, None]) & (count[:, None] + spans <= budgets[:, None])
        n = np.count_nonzero(fits, axis=1)  # spans grow with n: the largest n that fits
        inside = sizes < n[:, None] + 1
        overlaps = (covered[rows[:, None], first[:, None] + sizes - 1] & inside).any(axis=1)
        accept = active & (n > 0) & ~overlaps
        hit_rows, hit_sizes = np.nonzero(inside & accept[:, None])
        covered[hit_rows, first[hit_rows] + hit_sizes] = True
        count += np.where(accept, spans[rows, np.maximum(n, 1) - 1], 0)
        if ngram_counts is not None:
            ngram_counts += np.bincount(n[accept], minlength=ngram + 1)
    return covered


def mask_batch(
    ids: np.ndarray,
    is_word_start: np.ndarray,
    generators: Sequence[np.random.Generator],
    options: MaskingOptions,
    ngram_counts: np.ndarray | None = None,
) -> BatchMasked:
    """Mask every row of `ids` [B, T] (padding allowed) as `masking.mask_instance` masks one, row
    `b` with `generators[b]`; `is_word_start` [B, T] is the `token_boundary` feature. `ngram_counts`
    (int array of length `options.ngram + 1`), if given, is incremented as `mask_instance` does."""
    ids = np.asarray(ids)
    batch = len(ids)
    maskable = ~np.isin(ids, options.special_ids)
    budgets = prediction_budgets(ids, options)
    word_counts, word_of_token, _, word_lengths, _ = batch_word_spans(
        np.asarray(is_word_start, bool), maskable
    )
    order = np.zeros(word_lengths.shape, np.int64)
    uniforms = np.zeros(word_lengths.shape)
    for b in np.flatnonzero((word_counts > 0) & (budgets > 0)).tolist():
        count = int(word_counts[b])
        order[b, :count] = generators[b].permutation(count)
        uniforms[b, :count] = generators[b].random(count)
    drawn = np.searchsorted(options.ngram_cdf, uniforms, side="right") + 1
    chosen = _select_words(order, drawn, word_counts, word_lengths, budgets, options, ngram_counts)
    selected = maskable & np.take_along_axis(chosen, np.maximum(word_of_token, 0), axis=1)
    counts = np.count_nonzero(selected, axis=1)
    token_rows, token_positions = np.nonzero(selected)
    labels_flat = ids[token_rows, token_positions].astype(np.int64)
    choice = np.empty(len(token_rows))
    keep = np.empty(len(token_rows))
    random_slots = np.empty(len(token_rows), np.int64)
    offsets = np.concatenate(([0], np.cumsum(counts)))
    for b in np.flatnonzero(counts).tolist():
        start, stop = offsets[b], offsets[b + 1]
        generator = generators[b]
        choice[start:stop] = generator.random(stop - start)
        keep[start:stop] = generator.random(stop - start)
        random_slots[start:stop] = generator.integers(
            len(options.replacement_ids), size=stop - start
        )
    random_ids = options.replacement_ids[random_slots]
    replacement = np.where(
        choice < 0.8, options.mask_id, np.where(keep < 0.5, labels_flat, random_ids)
    )
    masked_ids = ids.copy()
    masked_ids[token_rows, token_positions] = replacement
    positions = np.zeros((batch, options.max_predictions_per_seq), np.int64)
    labels = np.zeros_like(positions)
    columns = np.arange(len(token_rows)) - offsets[token_rows]
    positions[token_rows, columns] = token_positions
    labels[token_rows, columns] = labels_flat
    return BatchMasked(masked_ids, positions, labels, counts.astype(np.int64))
