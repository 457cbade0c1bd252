"""Gopher's document rules (Rae et al. 2021, appendix A1; bounds as datatrove implements them):
quality (word count, mean word length, symbols, bullet and ellipsis lines, alphabetic words, stop
words) and repetition (repeated lines and paragraphs, the most frequent 2- to 4-gram, repeated 5- to
10-grams). A document's lines are its paragraphs, so the line and the paragraph checks measure the
same; both keep Gopher's bounds, except that the most frequent 2-gram judges only documents of
`top_2_gram_min_words` words or more: in a paragraph-sized document the most frequent 2-gram is
its topic's name, where a web page's is a template's. Words are computed once by the caller
(words.split_words: without surrounding punctuation), n-grams are counted as arrays of word ids."""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Sequence

import numpy as np

from albert.hashing import mix64
from pipelines.quality.settings import QualitySettings, Removal
from pipelines.quality.words import SEGMENTED_LANGUAGES

QUALITY = "gopher_quality"
REPETITION = "gopher_repetition"
BULLETS = ("•", "‣", "◦", "▪", "●", "-", "*")
ELLIPSES = ("...", "…")
TOP_N = (2, 3, 4)
DUPLICATE_N = (5, 6, 7, 8, 9, 10)


def text_length(paragraphs: Sequence[str]) -> int:
    """Characters of the document's text, its paragraphs joined by line breaks."""
    return sum(map(len, paragraphs)) + len(paragraphs) - 1


def _alpha_words(words: Sequence[str]) -> int:
    """Words holding an alphabetic character."""
    others = [w for w in itertools.filterfalse(str.isalpha, words) if not any(map(str.isalpha, w))]
    return len(words) - len(others)


def _stop_words_found(words: Sequence[str], stop_words: frozenset[str], enough: float) -> int:
    """Distinct stop words in `words` (case folded only if the words as written are too few)."""
    found = stop_words.intersection(words)
    if len(found) < enough:
        found |= stop_words.intersection(map(str.lower, words))
    return len(found)


def quality(
    paragraphs: Sequence[str],
    words: Sequence[str],
    stop_words: frozenset[str],
    settings: QualitySettings,
    language: str,
    *,
    long_form: bool = False,
) -> Removal | None:
    """The first failing Gopher quality check of a document, or None. A `long_form` document (a
    book or a chapter of one: long or short as its author chose) has no word-count bounds, which
    are a web page's; a language without stop words (empty `stop_words`) no stop-word check."""

    def bound(param: str) -> float:
        return settings.threshold(QUALITY, param, language)

    n_words = len(words)
    if not long_form and n_words < (least := bound("min_doc_words")):
        return Removal(f"{QUALITY}.min_doc_words", n_words, least)
    if not long_form and n_words > (most := bound("max_doc_words")):
        return Removal(f"{QUALITY}.max_doc_words", n_words, most)
    if not n_words:
        return None
    mean = sum(map(len, words)) / n_words
    if mean < (least := bound("min_avg_word_length")):
        return Removal(f"{QUALITY}.min_avg_word_length", mean, least)
    if mean > (most := bound("max_avg_word_length")):
        return Removal(f"{QUALITY}.max_avg_word_length", mean, most)
    most = bound("max_symbol_word_ratio")
    hashes = sum(p.count("#") for p in paragraphs) / n_words
    ellipses = sum(p.count("...") + p.count("…") for p in paragraphs) / n_words
    if max(hashes, ellipses) > most:
        return Removal(f"{QUALITY}.max_symbol_word_ratio", max(hashes, ellipses), most)
    bullets = sum(1 for p in paragraphs if p.startswith(BULLETS)) / len(paragraphs)
    if bullets > (most := bound("max_bullet_lines_ratio")):
        return Removal(f"{QUALITY}.max_bullet_lines_ratio", bullets, most)
    ellipsis_lines = sum(1 for p in paragraphs if p.endswith(ELLIPSES)) / len(paragraphs)
    if ellipsis_lines > (most := bound("max_ellipsis_lines_ratio")):
        return Removal(f"{QUALITY}.max_ellipsis_lines_ratio", ellipsis_lines, most)
    alpha = _alpha_words(words) / n_words
    if alpha < (least := bound("min_alpha_words_ratio")):
        return Removal(f"{QUALITY}.min_alpha_words_ratio", alpha, least)
    if stop_words:
        least = bound("min_stop_words")
        found = _stop_words_found(words, stop_words, least)
        if found < least:
            return Removal(f"{QUALITY}.min_stop_words", found, least)
    return None


def duplicates(items: Sequence[str]) -> tuple[int, int]:
    """(how many, their characters) of the items equal to an earlier item."""
    counts = Counter(items)
    if len(counts) == len(items):
        return 0, 0
    repeated = [(len(item), count - 1) for item, count in counts.items() if count > 1]
    return sum(c for _, c in repeated), sum(size * c for size, c in repeated)


class NGrams:
    """The n-grams of a word sequence for n = 1, 2, ...: one 64-bit key per start position (the
    previous key mixed with the next word's id; two of a document's different n-grams share a key
    with odds under 1e-7 for a million words) and the characters of each n-gram, its words joined
    by `joiner` characters: 1 (a space) where the text separates words, 0 where a segmenter cut
    them from unspaced text (Chinese, Japanese, Thai: no space is in the text to count)."""

    def __init__(self, words: Sequence[str], joiner: int = 1):
        self.joiner = joiner
        index = {word: i for i, word in enumerate(dict.fromkeys(words))}
        ids = np.fromiter(map(index.__getitem__, words), dtype=np.int64, count=len(words))
        word_lengths = np.fromiter(map(len, index), dtype=np.int64, count=len(index))
        self.lengths = word_lengths[ids]
        self._prefix = np.concatenate(([0], np.cumsum(self.lengths)))
        counts = np.bincount(ids)
        self.most_frequent = int(counts.max())
        """Occurrences of the most frequent word."""
        self.most_characters = int((counts * word_lengths).max())
        """Characters of all occurrences of the word whose occurrences have the most."""
        self._ids = ids.astype(np.uint64)
        self.n, self.keys = 1, mix64(self._ids)

    def advance(self) -> None:
        """From n-grams to (n+1)-grams."""
        self.keys = mix64(self.keys[:-1] * np.uint64(0x9E3779B97F4A7C15) + self._ids[self.n :])
        self.n += 1

    def characters(self) -> np.ndarray:
        """Characters of each current n-gram, its words joined by `joiner` characters."""
        n = self.n
        return self._prefix[n:] - self._prefix[:-n] + (n - 1) * self.joiner

    def top_bound(self) -> int:
        """A bound on the characters of all occurrences of the most frequent n-gram (each of its
        words has at most `most_characters`, each joining space at most `most_frequent`): under
        a fraction of the text, no exact count is needed. 0 if no word occurs twice."""
        if self.most_frequent < 2:
            return 0
        return self.n * self.most_characters + (self.n - 1) * self.most_frequent * self.joiner

    def _groups(self) -> tuple[np.ndarray, np.ndarray]:
        """(start positions sorted by key, where each run of equal keys starts in that order)."""
        order = np.argsort(self.keys)
        ordered = self.keys[order]
        return order, np.flatnonzero(np.concatenate(([True], ordered[1:] != ordered[:-1])))

    def top_characters(self) -> int:
        """Characters of all occurrences of the most frequent n-gram (of the longest, if tied);
        0 if no n-gram occurs twice (a short text's single n-grams repeat nothing)."""
        order, runs = self._groups()
        counts = np.diff(np.append(runs, len(order)))
        most = counts.max()
        if most < 2:
            return 0
        tied = order[np.repeat(counts == most, counts)]
        return int(self.characters()[tied].max()) * int(most)

    def repeated_characters(self) -> int:
        """Characters of the words covered by an n-gram occurring earlier in the text (Gopher's
        duplicate n-gram characters; words without their spaces, each counted once)."""
        order, runs = self._groups()
        if len(runs) == len(order):
            return 0
        starts = np.ones(len(order), dtype=np.int32)
        starts[np.minimum.reduceat(order, runs)] = 0
        covered = np.convolve(starts, np.ones(self.n, dtype=np.int32)) > 0
        return int(self.lengths[covered].sum())


def repetition(
    paragraphs: Sequence[str], words: Sequence[str], settings: QualitySettings, language: str
) -> Removal | None:
    """The first failing Gopher repetition check of a document, or None. Fractions are of the
    document's characters (`text_length`)."""

    def bound(param: str) -> float:
        return settings.threshold(REPETITION, param, language)

    total = text_length(paragraphs)
    repeated, repeated_chars = duplicates(paragraphs)
    for kind in ("para", "line"):
        for param, value in (
            (f"dup_{kind}_frac", repeated / len(paragraphs)),
            (f"dup_{kind}_char_frac", repeated_chars / total),
        ):
            if value > (most := bound(param)):
                return Removal(f"{REPETITION}.{param}", value, most)
    if len(words) < TOP_N[0]:
        return None
    grams = NGrams(words, joiner=0 if language in SEGMENTED_LANGUAGES else 1)
    while grams.n < DUPLICATE_N[-1] and grams.n < len(words):
        grams.advance()
        n = grams.n
        if n in TOP_N:
            most = bound(f"top_{n}_gram")
            if n == 2 and len(words) < bound("top_2_gram_min_words"):
                continue
            if (
                grams.top_bound() > most * total
                and (share := grams.top_characters() / total) > most
            ):
                return Removal(f"{REPETITION}.top_{n}_gram", share, most)
        elif n in DUPLICATE_N:
            share = grams.repeated_characters() / total
            if share > (most := bound(f"dup_{n}_gram")):
                return Removal(f"{REPETITION}.dup_{n}_gram", share, most)
            # the words covered by repeated (n+1)-grams are among those of repeated n-grams
            if share <= min((bound(f"dup_{m}_gram") for m in DUPLICATE_N if m > n), default=1):
                return None
    return None
