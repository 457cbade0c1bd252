"""Text normalisation, sentence splitting and content hashes shared by every input format.

Pure functions: the Beam job (pipelines.segment) calls them and injects its counters.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable
from typing import Literal

from pipelines.runner import Counter
from pipelines.shards import stable_hash

UnicodeForm = Literal["NFC", "NFKC"]



def _character_class(categories: tuple[str, ...], keep: str) -> str:
    """A regex character class of every code point in `categories` (except `keep`), as ranges."""
    ranges: list[list[int]] = []
    for code in range(0x110000):
        if unicodedata.category(chr(code)) in categories and chr(code) not in keep:
            if ranges and ranges[-1][1] == code - 1:
                ranges[-1][1] = code
            else:
                ranges.append([code, code])
    return "[" + "".join(
        re.escape(chr(a)) if a == b else f"{re.escape(chr(a))}-{re.escape(chr(b))}" for a, b in ranges
    ) + "]"


# Control, format, private-use and surrogate characters; whitespace controls are kept and become spaces.
_INVISIBLE = re.compile(_character_class(("Cc", "Cf", "Co", "Cs"), keep="\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f\x85"))
_WHITESPACE = re.compile(r"\s+")
# BlingFire's two common false splits: after a title abbreviation ("Mrs." | "Goddard's school...") and
# before a lower-case continuation ('"What!"' | 'said Mrs. Weston').
_TITLE_AT_END = re.compile(r"(?:^|[\s(\"'])(?:Mr|Mrs|Ms|Messrs|Mme|Mlle|Dr|Prof|Rev|Capt|Col|Gen|Lt|Sgt|Hon|St|Mt)\.$")
_LOWER_CASE_START = re.compile(r"^[\"'“”‘’(\[]*[a-z]")


def normalize_text(text: str, form: UnicodeForm = "NFKC") -> str:
    """Unicode-normalise, drop control/format characters and collapse all whitespace to single spaces."""
    text = unicodedata.normalize(form, text)
    text = _INVISIBLE.sub("", text)
    return _WHITESPACE.sub(" ", text).strip()


def repair_splits(sentences: list[str]) -> list[str]:
    """Re-join a sentence to the previous one after a title abbreviation or before a lower-case start."""
    repaired: list[str] = []
    for sentence in sentences:
        if repaired and (_TITLE_AT_END.search(repaired[-1]) or _LOWER_CASE_START.match(sentence)):
            repaired[-1] += " " + sentence
        else:
            repaired.append(sentence)
    return repaired


def split_long_sentence(sentence: str, max_chars: int) -> list[str]:
    """Cut a sentence longer than `max_chars` into pieces of at most `max_chars`, at spaces where possible."""
    pieces = []
    while len(sentence) > max_chars:
        cut = sentence.rfind(" ", 0, max_chars + 1)
        if cut <= 0:
            cut = max_chars
        pieces.append(sentence[:cut].rstrip())
        sentence = sentence[cut:].lstrip()
    if sentence:
        pieces.append(sentence)
    return pieces


class SentenceSplitter:
    """Splits a paragraph into sentences with BlingFire plus `repair_splits` (see docs/segment.md).

    Create one per worker (DoFn.setup): the library is loaded once.
    """

    def __init__(self, max_sentence_chars: int = 2000):
        import blingfire

        self._split = blingfire.text_to_sentences
        self.max_sentence_chars = max_sentence_chars

    def split(self, paragraph: str, inc: Counter | None = None) -> list[str]:
        """Sentences of one normalised paragraph; over-long ones are cut (counted as `sentences_cut`)."""
        sentences = []
        for sentence in repair_splits([s for s in self._split(paragraph).split("\n") if s.strip()]):
            sentence = sentence.strip()
            if len(sentence) > self.max_sentence_chars:
                pieces = split_long_sentence(sentence, self.max_sentence_chars)
                if inc is not None:
                    inc("sentences_cut", 1)
                sentences.extend(pieces)
            else:
                sentences.append(sentence)
        return sentences


def content_hash(paragraphs: Iterable[str]) -> int:
    """Stable hash of a document's normalised text (exact-duplicate detection)."""
    return stable_hash("\n".join(paragraphs).encode("utf-8"))


def paragraph_hash(paragraph: str) -> int:
    return stable_hash(b"p:" + paragraph.encode("utf-8"))


def document_block(sentences: Iterable[str]) -> str:
    """A document in the BERT/ALBERT input format: one sentence per line, then a blank line."""
    return "".join(sentence + "\n" for sentence in sentences) + "\n"
