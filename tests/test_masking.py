"""albert.masking: whole-word n-gram masking, its statistics and its agreement with the
reference."""

from __future__ import annotations

import random

import numpy as np
import pytest

from albert import masking

pytestmark = pytest.mark.backend_free

VOCAB = 30000
CLS, SEP, MASK = 2, 3, 4


def options(**kwargs) -> masking.MaskingOptions:
    return masking.MaskingOptions(replacement_ids=np.arange(5, VOCAB), **kwargs)


def synthetic(rng: np.random.Generator, length: int = 512, mean_word_pieces: float = 1.4):
    """[CLS] A [SEP] B [SEP] of random ids with words of ~mean_word_pieces pieces."""
    ids = rng.integers(5, VOCAB, length)
    ids[0], ids[length // 2], ids[-1] = CLS, SEP, SEP
    starts = rng.random(length) < 1 / mean_word_pieces
    starts[[0, length // 2, length - 1]] = True
    return ids, starts


@pytest.mark.parametrize(
    "piece, expected",
    [
        ("\u2581the", True),
        ("<unk>", True),
        (",", True),
        ("'", True),
        ("ing", False),
        ("s", False),
        ("'s", False),  # ASCII letters and punctuation only: continues a word, as the reference
        ("12", True),  # digits are not letters
        ("é", True),
        ("中", True),
        ("Ing", False),
    ],
)
def test_is_start_piece_matches_reference_rule(piece, expected):
    assert masking.is_start_piece(piece) is expected


def test_word_spans_never_cross_special_tokens():
    maskable = np.array([False, True, True, False, True, True, True, False])
    starts_flags = np.array([True, True, False, True, False, False, True, True])
    starts, ends = masking.word_spans(starts_flags, maskable)
    # the piece after [SEP] starts a word even though it is not a start piece
    assert list(zip(starts.tolist(), ends.tolist())) == [(1, 3), (4, 6), (6, 7)]


def test_budget_is_the_references():
    opts = options(max_predictions_per_seq=20)
    assert masking.num_to_predict(128, opts) == 19
    assert masking.num_to_predict(512, opts) == 20
    assert masking.num_to_predict(3, opts) == 1
    assert masking.num_to_predict(512, options(masked_lm_prob=0.0)) == 0


def test_mask_instance_contract():
    rng = np.random.default_rng(1)
    opts = options()
    for _ in range(200):
        ids, starts = synthetic(rng, length=int(rng.integers(8, 512)))
        masked_ids, positions, labels = masking.mask_instance(ids, starts, rng, opts)
        assert positions.dtype == np.int64 and labels.dtype == np.int64
        assert np.all(np.diff(positions) > 0), "positions sorted, no duplicates"
        assert len(positions) <= masking.num_to_predict(len(ids), opts)
        assert not np.isin(ids[positions], [CLS, SEP]).any(), "special tokens never masked"
        np.testing.assert_array_equal(labels, ids[positions])
        untouched = np.setdiff1d(np.arange(len(ids)), positions)
        np.testing.assert_array_equal(masked_ids[untouched], ids[untouched])
        assert not np.isin(masked_ids[positions], [0, 1, CLS, SEP]).any(), "no control replacements"
        # round trip: undoing the masks gives the original pieces in order
        restored = masked_ids.copy()
        restored[positions] = labels
        np.testing.assert_array_equal(restored, ids)


def test_whole_words_are_masked_together():
    rng = np.random.default_rng(2)
    for _ in range(100):
        ids, starts = synthetic(rng, 256, mean_word_pieces=2.5)
        _, positions, _ = masking.mask_instance(ids, starts, rng, options())
        masked = np.zeros(len(ids), bool)
        masked[positions] = True
        maskable = ~np.isin(ids, [CLS, SEP])
        word_starts, word_ends = masking.word_spans(starts, maskable)
        for start, end in zip(word_starts, word_ends):
            assert masked[start:end].all() or not masked[start:end].any()


def test_padding_is_ignored_for_dynamic_masking():
    rng = np.random.default_rng(3)
    ids, starts = synthetic(rng, 100)
    padded = np.concatenate([ids, np.zeros(28, np.int64)])
    padded_starts = np.concatenate([starts, np.zeros(28, bool)])
    _, positions, _ = masking.mask_instance(padded, padded_starts, rng, options())
    assert positions.max() < 100
    assert len(positions) == masking.num_to_predict(100, options())


def test_deterministic_given_the_generator():
    ids, starts = synthetic(np.random.default_rng(4))
    first = masking.mask_instance(ids, starts, np.random.default_rng(7), options())
    second = masking.mask_instance(ids, starts, np.random.default_rng(7), options())
    for a, b in zip(first, second):
        np.testing.assert_array_equal(a, b)


def _statistics(num_instances=2000, length=512, **kwargs):
    rng = np.random.default_rng(5)
    opts = options(**kwargs)
    counts = np.zeros(opts.ngram + 1, np.int64)
    replaced = np.zeros(3)
    predictions = []
    for _ in range(num_instances):
        ids, starts = synthetic(rng, length)
        masked_ids, positions, labels = masking.mask_instance(ids, starts, rng, opts, counts)
        predictions.append(len(positions))
        now = masked_ids[positions]
        replaced += [
            (now == MASK).sum(),
            (now == labels).sum(),
            ((now != MASK) & (now != labels)).sum(),
        ]
    return counts[1:] / counts.sum(), replaced / replaced.sum(), np.mean(predictions)


def test_statistics_over_many_512_token_instances():
    histogram, replaced, mean_predictions = _statistics()
    assert mean_predictions == pytest.approx(20, abs=0.1)
    np.testing.assert_allclose(replaced, [0.8, 0.1, 0.1], atol=0.01)
    # n drawn with p = [0.545, 0.273, 0.182]; overlaps and the budget shorten some n-grams (as the
    # reference)
    np.testing.assert_allclose(histogram, [6 / 11, 3 / 11, 2 / 11], atol=0.06)


def test_ngram_distribution_with_few_overlaps():
    few = {
        "num_instances": 100,
        "length": 8192,
        "masked_lm_prob": 0.03,
        "max_predictions_per_seq": 10_000,
    }
    histogram, _, _ = _statistics(**few)
    np.testing.assert_allclose(histogram, [6 / 11, 3 / 11, 2 / 11], atol=0.02)
    histogram, _, _ = _statistics(**few, favor_shorter_ngram=False)
    np.testing.assert_allclose(histogram, [2 / 11, 3 / 11, 6 / 11], atol=0.03)


def reference_ngram_histogram(
    starts: list[bool], budget: int, rng: random.Random, ngram=3
) -> list[int]:
    """The reference's selection loop, restated over word-start flags, counting chosen n-gram
    lengths."""
    words: list[list[int]] = []
    for index, start in enumerate(starts):
        if words and not start:
            words[-1].append(index)
        else:
            words.append([index])
    weights = [1 / n for n in range(1, ngram + 1)]
    candidates = [[words[i : i + n] for n in range(1, ngram + 1)] for i in range(len(words))]
    rng.shuffle(candidates)
    counts = [0] * (ngram + 1)
    covered: set[int] = set()
    chosen = 0
    for candidate in candidates:
        if chosen >= budget:
            break
        n = rng.choices(range(1, ngram + 1), weights=weights)[0]
        while n > 1 and chosen + sum(len(w) for w in candidate[n - 1]) > budget:
            n -= 1
        pieces = [i for word in candidate[n - 1] for i in word]
        if chosen + len(pieces) > budget or covered.intersection(pieces):
            continue
        covered.update(pieces)
        chosen += len(pieces)
        counts[len(candidate[n - 1])] += 1
    return counts


def test_ngram_histogram_matches_the_reference_algorithm():
    rng = np.random.default_rng(6)
    reference_rng = random.Random(6)
    ours = np.zeros(4, np.int64)
    theirs = np.zeros(4, np.int64)
    opts = options()
    for _ in range(1500):
        ids = rng.integers(5, VOCAB, 510)
        starts = rng.random(510) < 0.7
        masking.mask_instance(ids, starts, rng, opts, ours)
        theirs += reference_ngram_histogram(starts.tolist(), 20, reference_rng)
    np.testing.assert_allclose(ours[1:] / ours.sum(), theirs[1:] / theirs.sum(), atol=0.015)


def test_options_from_vocabulary_exclude_controls():
    opts = masking.MaskingOptions.for_vocabulary(10, lambda i: i < 5)
    assert opts.replacement_ids.tolist() == [5, 6, 7, 8, 9]
    with pytest.raises(ValueError):
        masking.MaskingOptions(replacement_ids=np.array([], dtype=np.int64))


def test_mask_tokens_for_the_trainer():
    rng = np.random.default_rng(8)
    ids, starts = synthetic(rng, 128)
    masked_ids, positions, _ = masking.mask_tokens(
        ids.tolist(), starts.astype(int).tolist(), np.random.default_rng(9), vocab_size=VOCAB
    )
    expected = masking.mask_instance(ids, starts, np.random.default_rng(9), options())
    np.testing.assert_array_equal(masked_ids, expected.masked_ids)
    np.testing.assert_array_equal(positions, expected.positions)
    assert len(positions) == 19
