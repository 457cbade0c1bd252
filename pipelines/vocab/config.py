"""What the vocab stage is asked (`VocabConfig`), without Beam: the flows build and check it
before anything loads Beam."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, model_validator

from albert.config import StageConfig
from albert.languages import DEFAULT_CHARACTER_COVERAGE, NORMALIZATIONS, language_profile
from albert.vocabulary_record import Preprocessing

PROFILE_FIELDS = {
    "do_lower_case": lambda profile: profile.lowercase,
    "keep_accents": lambda profile: not profile.strip_accents,
    "normalization": lambda profile: profile.normalization,
    "character_coverage": lambda profile: profile.character_coverage,
}
"""The fields `--language`'s profile sets, each unless given."""


class VocabConfig(StageConfig):
    input: str = Field(
        description="segmented corpus: a directory of *.txt shards, or a glob of them"
    )
    output: str = Field(
        description="directory to write spiece.model, spiece.vocab, vocab_stats.json"
    )
    vocab_size: int = Field(30000, ge=16, description="number of pieces, special symbols included")
    sample_sentences: int = Field(10_000_000, gt=0, description="sentences to train on")
    heldout_sentences: int = Field(
        10_000,
        ge=0,
        description=(
            "held-out sentences for unk rate and pieces per word (at most 5 percent of the corpus)"
        ),
    )
    seed: int = Field(0, description="seed of the hash that draws the sample")
    language: str | None = Field(
        None,
        description="the corpus's language (ISO 639 code): its profile (docs/languages.md) sets "
        "the fields below unless given; none: English's, the reference's preprocessing",
    )
    do_lower_case: bool = Field(
        True, description="lowercase the sample, as the tokenizer will (uncased)"
    )
    keep_accents: bool = Field(False, description="keep accents instead of stripping them")
    normalization: Literal[NORMALIZATIONS] = Field(
        "nmt_nfkc", description="SentencePiece's normalization rule, compiled into the model"
    )
    character_coverage: float = Field(
        DEFAULT_CHARACTER_COVERAGE, gt=0, le=1, description="SentencePiece character coverage"
    )
    num_threads: int = Field(
        0,
        ge=0,
        description="trainer threads; 0 = the worker's cores. The model depends on it: fix it "
        "for byte-identical vocabularies across machines",
    )
    max_sentence_bytes: int = Field(
        4192, gt=0, description="longer lines (in UTF-8 bytes) are skipped and counted"
    )

    @model_validator(mode="before")
    @classmethod
    def _profile_defaults(cls, data: Any) -> Any:
        """--language's profile fills the preprocessing and coverage fields not given."""
        if not isinstance(data, dict) or data.get("language") is None:
            return data
        profile = language_profile(data["language"])
        return {name: value(profile) for name, value in PROFILE_FIELDS.items()} | data

    def preprocessing(self) -> Preprocessing:
        """What the vocabulary's record states (`albert.vocabulary_record`)."""
        return Preprocessing(
            lowercase=self.do_lower_case,
            strip_accents=not self.keep_accents,
            normalization=self.normalization,
            language=self.language,
        )
