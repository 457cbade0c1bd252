"""What the vocab stage is asked (`VocabConfig`), without Beam: the flows build and check it
before anything loads Beam."""

from __future__ import annotations

from pydantic import Field

from albert.config import StageConfig


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
    do_lower_case: bool = Field(
        True, description="lowercase the sample, as the tokenizer will (uncased)"
    )
    keep_accents: bool = Field(False, description="keep accents instead of stripping them")
    character_coverage: float = Field(
        0.99995, gt=0, le=1, description="SentencePiece character coverage"
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
