"""The shared normalisation of near-duplicate removal and decontamination."""

import pytest

from pipelines.common.word_ngrams import normalised_words, word_ngrams

pytestmark = pytest.mark.backend_free


def test_case_punctuation_and_whitespace_are_folded():
    assert normalised_words("The  QUICK, brown—fox!\n") == normalised_words("the quick brown fox")


def test_compatibility_forms_are_folded():
    assert normalised_words("ﬁne ＡＢＣ") == ["fine", "abc"]


def test_ngrams_run_in_order_and_a_short_text_has_none():
    words = normalised_words("a b c d")
    assert list(word_ngrams(words, 3)) == ["a b c", "b c d"]
    assert list(word_ngrams(words, 5)) == []
