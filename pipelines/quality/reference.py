"""The reference model: a small hashed word-bigram language model of good text, which judges the
documents a web-page rule would remove (chain.OVERRIDABLE's checks) and those in a target language
that language identification scores under its threshold (chain.LOW_SCORE). It is trained on the
team's own examples (segment's `--reference-text`) or, by default, on the documents of the same run
that every check kept (their cleaned lines) (`confident`).

Words are a paragraph's `\\w+` runs, lower-cased; each is hashed (CRC-32, then albert.hashing's
mix64) into one of BUCKETS, and so is each pair of consecutive words of a paragraph. The model is
the two count tables (`ReferenceCounts`: sums over documents, so the same in any order, on any
number of workers). A document's score (`ReferenceModel.score`) is the mean, over its pairs of
consecutive words that are both letters only (a pair holding a number, a size, a version or a name
such as `loop0` is no evidence either way: no reference vouches for it), of how much better the
reference predicts the second word after the first than alone: log(LAMBDA P(w | v) / P(w) + 1 -
LAMBDA), P(w) add-one smoothed over the buckets, P(w | v) the pair's count less DISCOUNT over the
first word's (at most the first word's count: a pair counted more often shares its bucket with
other pairs, which are no evidence for it); a pair that repeats an earlier pair of the document
scores as one the reference never saw, log(1 - LAMBDA) (-0.69). Text like the reference scores
above 0 (its word pairs are the reference's), words strung together at random or by a template near
-0.69, and repeating a passage lowers a score."""

from __future__ import annotations

import re
import zlib
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from albert.hashing import mix64

BUCKETS = 1 << 20
"""Hash buckets of each table (words and word pairs): 4 MiB of counts each."""
LAMBDA = 0.5
"""Weight of P(w | v) against P(w) in the interpolated prediction."""
DISCOUNT = 1.0
"""Taken from each pair's count: a pair seen once (or a bucket another pair shares once) is not
evidence."""
_PAIR = np.uint64(0x9E3779B97F4A7C15)
_MASK = np.uint64(BUCKETS - 1)
_WORD = re.compile(r"\w+")


def _words(paragraph: str) -> list[str]:
    """A paragraph's lower-cased words, in order."""
    return _WORD.findall(paragraph.lower())


def word_keys(paragraph: str) -> np.ndarray:
    """The 64-bit keys of a paragraph's lower-cased words, in order."""
    words = _words(paragraph)
    crcs = np.fromiter(
        (zlib.crc32(word.encode("utf-8")) for word in words), dtype=np.uint64, count=len(words)
    )
    return mix64(crcs)


def letter_words(paragraph: str) -> np.ndarray:
    """Which of a paragraph's words (`word_keys`' order) are letters only: the others (numbers,
    sizes, versions, `loop0`, `some_command`) name things no reference can vouch for."""
    return np.fromiter((word.isalpha() for word in _words(paragraph)), dtype=bool)


def pair_keys(keys: np.ndarray) -> np.ndarray:
    """The keys of each pair of consecutive words of a paragraph."""
    return mix64(keys[:-1] * _PAIR + keys[1:])


def _packed(table: np.ndarray) -> tuple[np.ndarray, ...]:
    """A count table as a runner carries it: its non-zero buckets and their counts where that is
    smaller (a small reference fills few), else the table."""
    nonzero = np.flatnonzero(table)
    if 2 * len(nonzero) >= len(table):
        return (table,)
    return nonzero.astype(np.int32), table[nonzero]


def _unpacked(packed: tuple[np.ndarray, ...]) -> np.ndarray:
    """The count table of `_packed`'s form."""
    if len(packed) == 1:
        return packed[0]
    table = np.zeros(BUCKETS, np.int32)
    table[packed[0]] = packed[1]
    return table


@dataclass
class ReferenceCounts:
    """Counts of the reference's words and word pairs per bucket, and its words; sums, so the
    same whatever the order the text is added in. A runner carries them `_packed`."""

    words: np.ndarray
    pairs: np.ndarray

    @classmethod
    def empty(cls) -> ReferenceCounts:
        return cls(np.zeros(BUCKETS, np.int32), np.zeros(BUCKETS, np.int32))

    @property
    def total(self) -> int:
        """Words counted."""
        return int(self.words.sum(dtype=np.int64))

    def add(self, paragraphs: Iterable[str]) -> ReferenceCounts:
        """These counts with a document's paragraphs added (in place; returned)."""
        for paragraph in paragraphs:
            keys = word_keys(paragraph)
            np.add.at(self.words, (keys & _MASK).astype(np.intp), 1)
            if len(keys) > 1:
                np.add.at(self.pairs, (pair_keys(keys) & _MASK).astype(np.intp), 1)
        return self

    def merge(self, other: ReferenceCounts) -> ReferenceCounts:
        """These counts with `other`'s added (in place; returned)."""
        self.words += other.words
        self.pairs += other.pairs
        return self

    def __getstate__(self):
        return _packed(self.words), _packed(self.pairs)

    def __setstate__(self, state):
        self.words, self.pairs = map(_unpacked, state)


@dataclass(frozen=True)
class ReferenceModel:
    """The reference's counts per bucket (of words, of word pairs) and its words: what the side
    input carries (8 MiB); probabilities are computed for the buckets a document uses."""

    words: np.ndarray
    pairs: np.ndarray
    total: int
    """Words of the reference."""

    @classmethod
    def from_counts(cls, counts: ReferenceCounts) -> ReferenceModel:
        return cls(counts.words, counts.pairs, counts.total)

    def __getstate__(self):
        return _packed(self.words), _packed(self.pairs), self.total

    def __setstate__(self, state):
        words, pairs, total = state
        object.__setattr__(self, "words", _unpacked(words))
        object.__setattr__(self, "pairs", _unpacked(pairs))
        object.__setattr__(self, "total", total)

    def score(self, paragraphs: Iterable[str]) -> float:
        """The document's mean gain per pair of letter words (module docstring); 0.0 without
        one."""
        pairs, firsts, seconds = [], [], []
        for paragraph in paragraphs:
            keys = word_keys(paragraph)
            if len(keys) > 1:
                letters = letter_words(paragraph)
                both = letters[:-1] & letters[1:]
                pairs.append(pair_keys(keys)[both])
                firsts.append(keys[:-1][both])
                seconds.append(keys[1:][both])
        if not sum(map(len, pairs)):
            return 0.0
        pair = np.concatenate(pairs)
        _, first_seen = np.unique(pair, return_index=True)
        pair_bucket = (pair[first_seen] & _MASK).astype(np.intp)
        first = (np.concatenate(firsts)[first_seen] & _MASK).astype(np.intp)
        second = (np.concatenate(seconds)[first_seen] & _MASK).astype(np.intp)
        seen = np.minimum(self.pairs[pair_bucket], self.words[first])
        evidence = np.maximum(seen - DISCOUNT, 0) / np.maximum(self.words[first], 1)
        word = (self.words[second] + 1.0) / (self.total + BUCKETS)
        gains = np.log(LAMBDA * evidence / word + 1 - LAMBDA)
        repeats = len(pair) - len(first_seen)
        return float((gains.sum() + repeats * np.log(1 - LAMBDA)) / len(pair))
