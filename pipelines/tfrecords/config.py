"""The typed configuration of the pretraining TFRecords stage (pipelines.tfrecords)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from albert.config import StageConfig
from albert.languages import LanguageCode

WordSegmenter = Literal["none", "whitespace", "jieba", "tinysegmenter"]
"""The words of whole-word masking (`pipelines.tfrecords.word_starts`)."""

SPECIAL_TOKENS = 3
"""[CLS] A [SEP] B [SEP]: the tokens of an instance that are not text."""


class TFRecordsConfig(StageConfig):
    input: str = Field(
        description="segmented corpus: a directory of *.txt[.gz|.bz2] shards, a file or a glob"
    )
    spm_model: str = Field(
        description="SentencePiece model (ALBERT special ids: <pad> <unk> [CLS] [SEP] [MASK])"
    )
    output: str = Field(description="output directory for *.tfrecord shards and metadata.json")
    max_seq_length: int = Field(
        512, ge=5, description="tokens per instance incl. [CLS] and two [SEP]"
    )
    max_predictions_per_seq: int = Field(20, ge=1, description="most masked positions per instance")
    masked_lm_prob: float = Field(0.15, ge=0, le=1, description="fraction of tokens to mask")
    ngram: int = Field(3, ge=1, description="longest masked n-gram, in whole words")
    favor_shorter_ngram: bool = Field(
        True, description="draw n with p ~ 1/n (else p ~ 1/(ngram+1-n))"
    )
    dupe_factor: int = Field(
        40, ge=1, description="passes over the corpus with different masks (static only)"
    )
    short_seq_prob: float = Field(
        0.1, ge=0, le=1, description="probability of a shorter random target length"
    )
    seed: int = Field(12345, ge=0, description="seed of every random choice")
    objective: Literal["sop", "nsp"] = Field(
        "sop", description="sentence-order (ALBERT) or next-sentence (BERT)"
    )
    masking: Literal["static", "dynamic"] = Field(
        "static",
        description=(
            "static: masks written, dupe_factor passes; dynamic: one pass, masked at training"
        ),
    )
    word_segmenter: WordSegmenter | None = Field(
        None,
        description=(
            "the words of whole-word masking: none = the reference's per-piece rule (English); "
            "whitespace = space-separated words; jieba (Chinese), tinysegmenter (Japanese). "
            "Not given: the language's profile (--language, else the vocabulary record's; "
            "docs/languages.md), the reference's rule for a vocabulary without a language"
        ),
    )
    do_lower_case: bool | None = Field(
        None,
        description="none: as the vocabulary's record says (spiece.json beside --spm-model), "
        "which every stage reads; a value that contradicts the record is an error. A vocabulary "
        "without a record: lowercase unless false",
    )
    language: LanguageCode | None = Field(
        None,
        description="the corpus's language; none: the vocabulary's record's. A language other "
        "than the record's is an error (the vocabulary chose the preprocessing)",
    )
    num_shards: int = Field(
        64,
        ge=1,
        description="output shards (written by merging sorted runs from disk, memory stays flat)",
    )
    nsp_bucket_documents: int = Field(
        256,
        ge=2,
        description="NSP only: documents per bucket that random B segments are drawn from",
    )
    heldout_fraction: float = Field(
        0.05,
        ge=0,
        le=1,
        description=(
            "fraction of documents held out whole (by a stable hash of their text); 1 = all"
        ),
    )
    heldout_min_documents: int = Field(
        2, ge=0, description="hold out at least this many documents (the hash-smallest ones)"
    )

    @property
    def passes(self) -> int:
        """Passes over the corpus: `dupe_factor` for static masks, 1 for dynamic ones."""
        return self.dupe_factor if self.masking == "static" else 1

    @model_validator(mode="after")
    def _predictions_fit_the_sequence(self) -> TFRecordsConfig:
        room = self.max_seq_length - SPECIAL_TOKENS
        if self.max_predictions_per_seq > room:
            raise ValueError(
                f"max_predictions_per_seq={self.max_predictions_per_seq} is more than a sequence "
                f"can hold: max_seq_length={self.max_seq_length} leaves {room} maskable tokens "
                "after [CLS] and two [SEP]"
            )
        return self
