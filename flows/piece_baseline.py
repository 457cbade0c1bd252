"""The baseline a run's held-out scores stand beside: the unigram model of the run's own training
pieces (`model.evaluation.baselines.unigram_baseline`), with its predicted piece's text."""

from __future__ import annotations

import sentencepiece

from flows.run_config import RunConfig
from model.evaluation.baselines import unigram_baseline


def piece_baseline(config: RunConfig, spm_model: str) -> dict:
    """The unigram baseline on this run's held-out batches, with the predicted piece's text."""

    baseline = unigram_baseline(
        config.stage_dir("tfrecords"),
        batch_size=config.batch_size,
        heldout_batches=config.eval_batches,
        seed=config.seed,
    )
    processor = sentencepiece.SentencePieceProcessor(model_file=spm_model)
    return {**baseline, "piece": processor.id_to_piece(baseline["piece_id"])}
