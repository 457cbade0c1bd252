"""metadata.json of the TFRecords stage: the facts a trainer needs, statistics, the held-out split.

Written by the pipeline itself (`write_metadata`, the stage's WriteSummary step) from the counts
summed in the pipeline, so it is complete on any runner.
"""

from __future__ import annotations

import json
import logging
import os
from dataclasses import asdict
from typing import NamedTuple

from albert import pretraining_example as features
from albert.errors import StageError
from albert.fs import join, open_file
from albert.vocabulary_record import REFERENCE, Preprocessing
from pipelines.common import spill
from pipelines.tfrecords.config import SPECIAL_TOKENS, TFRecordsConfig
from pipelines.tfrecords.heldout import HELDOUT_PREFIX, few_documents_note

FORMAT = "albert-pretraining-tfrecord-v1"
METADATA_FILE = "metadata.json"
TRUNCATION_NOTE_FRACTION = 0.10


class Vocabulary(NamedTuple):
    """What metadata.json records of the SentencePiece model: its size, its file's sha256 and the
    preprocessing its record states (the text the instances were tokenized from)."""

    size: int
    sha256: str
    preprocessing: Preprocessing = REFERENCE


def truncation(config: TFRecordsConfig, counts: dict[str, int]) -> dict | None:
    """How much of the corpus's text the instances leave out (text beyond `max_seq_length` is cut):
    metadata.json's `truncation` block, `{max_seq_length, passes, corpus_tokens, dropped_tokens,
    dropped_fraction}` (corpus tokens counted once per pass); None for NSP (no exact count)."""
    corpus = counts.get("document_tokens", 0) * config.passes
    kept = counts.get("tokens", 0) - SPECIAL_TOKENS * counts.get("instances", 0)
    if not corpus or config.objective != "sop":
        return None
    dropped = max(0, corpus - kept)
    return {
        "max_seq_length": config.max_seq_length,
        "passes": config.passes,
        "corpus_tokens": corpus,
        "dropped_tokens": dropped,
        "dropped_fraction": dropped / corpus,
    }


def truncation_note(config: TFRecordsConfig, cut: dict | None) -> tuple[int, str] | None:
    """(log level, message) when the instances leave out 10% or more of the corpus's text: a warning
    when --max-seq-length is the user's choice (a field they set), information when it is a
    default (the run report shows the figure either way); None below 10%."""
    if not cut or cut["dropped_fraction"] < TRUNCATION_NOTE_FRACTION:
        return None
    chosen = "max_seq_length" in config.model_fields_set
    length = config.max_seq_length
    return logging.WARNING if chosen else logging.INFO, (
        f"{config.input}: --max-seq-length {length} dropped {cut['dropped_fraction']:.0%} of the "
        f"corpus's tokens ({cut['dropped_tokens']:,} of {cut['corpus_tokens']:,} over "
        f"{cut['passes']} pass(es)): text beyond {length - SPECIAL_TOKENS} pieces per instance is "
        "truncated; raise --max-seq-length"
    )


def summarize(
    config: TFRecordsConfig,
    counts: dict[str, int],
    vocabulary: Vocabulary,
    shard_files: list[str],
    document_list: str,
) -> dict:
    """metadata.json: format, the facts a trainer needs at top level, feature spec, counts,
    statistics, options, the vocabulary's size and digest, the held-out split (its shard files and
    `document_list`, the held-out documents' list)."""
    ngram_counts = [counts.get(f"masked_ngrams_{n}", 0) for n in range(1, config.ngram + 1)]
    total_ngrams = sum(ngram_counts)
    instances_count = counts.get("instances", 0)

    def per_instance(name: str) -> float | None:
        return counts.get(name, 0) / instances_count if instances_count else None

    return {
        "format": FORMAT,
        "max_seq_length": config.max_seq_length,
        "max_predictions_per_seq": config.max_predictions_per_seq,
        "masking": config.masking,
        "objective": config.objective,
        "masked_lm_prob": config.masked_lm_prob,
        "ngram": config.ngram,
        "favor_shorter_ngram": config.favor_shorter_ngram,
        "dupe_factor": config.passes,
        "do_lower_case": vocabulary.preprocessing.lowercase,
        "preprocessing": asdict(vocabulary.preprocessing),
        "vocab_size": vocabulary.size,
        "features": features.feature_spec_json(
            config.max_seq_length, config.max_predictions_per_seq
        ),
        "counts": counts,
        f"{config.objective}_label_balance": per_instance("label_1"),
        "masked_ngram_histogram": [c / total_ngrams for c in ngram_counts]
        if total_ngrams
        else None,
        "mean_tokens_per_instance": per_instance("tokens"),
        "mean_predictions_per_instance": per_instance("masked_tokens"),
        "truncation": truncation(config, counts),
        "spm_model_sha256": vocabulary.sha256,
        "options": config.model_dump(),
        "files": shard_files,
        "heldout": {
            "selection": "whole documents: sha256 of the document's text below the cutoff",
            "fraction": config.heldout_fraction,
            "min_documents": config.heldout_min_documents,
            "documents": counts.get("heldout_documents", 0),
            "instances": counts.get("heldout_instances", 0),
            "files": [name for name in shard_files if name.startswith(HELDOUT_PREFIX + "-")],
            "document_list": document_list,
            "note": few_documents_note(
                counts.get("documents", 0),
                counts.get("heldout_documents", 0),
                config.heldout_min_documents,
            ),
        },
    }


def write_metadata(
    counts: dict[str, int],
    shards: list[str],
    written: list[str],
    config: TFRecordsConfig,
    vocabulary: Vocabulary,
    output_dir: str,
    run_dirs: list[str],
) -> None:
    """Write metadata.json from the pipeline's counts once every shard and the held-out documents'
    list (`written`) are written, removing the spill's `run_dirs`; no instances is an error."""
    spill.remove_run_dirs(run_dirs)
    if not counts.get("instances"):
        raise StageError(
            f"{config.input}: no instances: the corpus is empty ({counts.get('documents', 0)} "
            f"documents, {counts.get('document_tokens', 0)} tokens)"
        )
    metadata = summarize(
        config,
        counts,
        vocabulary,
        sorted(os.path.basename(path) for path in shards),
        os.path.basename(written[0]),
    )
    with open_file(join(output_dir, METADATA_FILE), "w") as handle:
        json.dump(metadata, handle, indent=2, sort_keys=True)
