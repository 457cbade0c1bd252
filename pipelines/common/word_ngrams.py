"""Word n-grams of normalised text, which near-duplicate removal and decontamination compare.

Normalisation folds what a copy of a text commonly changes without changing its words: Unicode
form (NFKC), letter case, punctuation and whitespace. Texts that differ only there give the same
words.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterator, Sequence

_WORD = re.compile(r"\w+")


def normalised_words(text: str) -> list[str]:
    """The words of `text`, NFKC-normalised and lowercased; punctuation and whitespace dropped."""
    return _WORD.findall(unicodedata.normalize("NFKC", text).casefold())


def word_ngrams(words: Sequence[str], n: int) -> Iterator[str]:
    """Every run of `n` consecutive words, joined by one space, in order (repeats included).

    A text of fewer than `n` words has none.
    """
    for start in range(len(words) - n + 1):
        yield " ".join(words[start : start + n])
