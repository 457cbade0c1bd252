"""The language profiles: what `--language CODE` sets in each stage, one frozen record per language
(as datatrove keeps one FineWeb-2 config per language), documented in docs/languages.md.

A profile holds the vocabulary's text preprocessing (case, accents, the SentencePiece
normalization rule), its character coverage, the language segment's cleaning keeps (its
`--language` target; the per-language cleaning thresholds live in the cleaning step's own table,
`pipelines.quality.words.LANGUAGE_THRESHOLDS`) and the word segmenter whole-word masking uses.
Every field is a default: the stage's own flag or config field overrides it.

English keeps google-research/albert's preprocessing (lowercase, accents stripped), so the
reference's vocabularies and TFRecords are reproduced; every other language keeps case and accents
and normalizes with SentencePiece's `nmt_nfkc` alone (NFKC plus whitespace cleanup), which changes
no letter of any script, and masks whole space-separated words (Japanese and Chinese: their
segmenters' words; Thai, Lao, Khmer and Burmese, which space phrases, not words: the reference's
rule). A code missing
from the table gets the default too.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Annotated

from pydantic import AfterValidator

NORMALIZATIONS = ("nmt_nfkc", "nfkc", "nmt_nfkc_cf", "nfkc_cf", "identity")
"""The normalization rules SentencePiece's trainer compiles into a model."""
WORD_SEGMENTERS = ("none", "whitespace", "jieba", "tinysegmenter")
"""Whole-word masking's words (the tfrecords stage's `word_segmenter`): "none" is the reference's
rule (a piece starting with "▁" or holding a non-ASCII character starts a word, so outside ASCII
a "word" is one piece); "whitespace" the text's space-separated words; jieba (Chinese) and
TinySegmenter (Japanese) the words of those segmenters."""
DEFAULT_CHARACTER_COVERAGE = 0.99995


@dataclass(frozen=True)
class LanguageProfile:
    """What one language sets: the vocabulary's preprocessing and coverage, the cleaning target,
    the masking's word segmenter."""

    code: str
    name: str
    lowercase: bool = False
    strip_accents: bool = False
    normalization: str = "nmt_nfkc"
    character_coverage: float = DEFAULT_CHARACTER_COVERAGE
    word_segmenter: str = "whitespace"

    @property
    def cleaning_language(self) -> str:
        """segment's `--language` target: the language identifier's label, the profile's code."""
        return self.code


PROFILES: dict[str, LanguageProfile] = {
    profile.code: profile
    for profile in (
        LanguageProfile("en", "English", lowercase=True, strip_accents=True, word_segmenter="none"),
        LanguageProfile("de", "German"),
        LanguageProfile("fr", "French"),
        LanguageProfile("es", "Spanish"),
        LanguageProfile("it", "Italian"),
        LanguageProfile("pt", "Portuguese"),
        LanguageProfile("nl", "Dutch"),
        LanguageProfile("pl", "Polish"),
        LanguageProfile("ru", "Russian"),
        LanguageProfile("tr", "Turkish"),
        LanguageProfile("vi", "Vietnamese"),
        LanguageProfile("hi", "Hindi"),
        LanguageProfile("ar", "Arabic"),
        LanguageProfile("ko", "Korean"),
        LanguageProfile("ja", "Japanese", word_segmenter="tinysegmenter"),
        LanguageProfile("zh", "Chinese", word_segmenter="jieba"),
        LanguageProfile("th", "Thai", word_segmenter="none"),
        LanguageProfile("lo", "Lao", word_segmenter="none"),
        LanguageProfile("km", "Khmer", word_segmenter="none"),
        LanguageProfile("my", "Burmese", word_segmenter="none"),
    )
}
"""The profiles with a name and their own settings; any other code gets `language_profile`'s
default (keep case and accents, nmt_nfkc, whitespace words)."""

_CODE = re.compile(r"[a-z]{2,3}")


def language_profile(code: str) -> LanguageProfile:
    """The profile of an ISO 639 code (two or three lower-case letters); ValueError (one line)
    for anything else. A code without a row of `PROFILES` gets the non-English default."""
    if not isinstance(code, str) or not _CODE.fullmatch(code):
        raise ValueError(
            f"language {code!r}: expected an ISO 639 code of 2 or 3 lower-case letters "
            f"(e.g. {', '.join(sorted(PROFILES))})"
        )
    return PROFILES.get(code) or LanguageProfile(code, code)


def _checked(code: str) -> str:
    language_profile(code)
    return code


LanguageCode = Annotated[str, AfterValidator(_checked)]
"""A config field holding a language code `language_profile` accepts (else one line, exit 2)."""
