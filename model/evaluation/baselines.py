"""Baselines a pretrained model's held-out figures are read against.

Masked-LM: always predict the piece most often masked in the training data (the unigram-frequency
baseline); sentence order: always predict the training data's majority label (0.5 by construction
of SOP data, up to sampling). Reads the batches the trainer reads (`model.input.source`: Grain
on JAX, without TensorFlow; tf.data on TensorFlow).
"""

from __future__ import annotations

import itertools

import numpy as np

from model.input import records as pretrain_records
from model.input import source as pretrain_input


def unigram_baseline(
    data: str,
    *,
    batch_size: int = 64,
    train_batches: int = 200,
    heldout_batches: int | None = None,
    seed: int = 0,
) -> dict:
    """Accuracy of the majority predictions on `data`'s held-out split (the batches the held-out
    evaluation scores when `heldout_batches` and `batch_size` match it), with the counts learned
    from the first `train_batches` training batches of epoch 0.

    Returns {masked_lm_accuracy, sop_accuracy, piece_id, train_masked_tokens,
    heldout_masked_tokens}.
    """
    spec = pretrain_records.inspect_data(data)
    counts = np.zeros(0, np.int64)
    order = np.zeros(2, np.int64)
    training = pretrain_input.numpy_batches(
        pretrain_input.train_batches(spec, batch_size, epoch=0, seed=seed)
    )
    for batch in itertools.islice(training, train_batches):
        labels = batch["masked_lm_ids"][batch["masked_lm_weights"] > 0]
        counts = _add_counts(counts, labels)
        order += np.bincount(batch["next_sentence_labels"].ravel(), minlength=2)[:2]
    piece = int(np.argmax(counts)) if counts.any() else 0
    majority = int(np.argmax(order))
    hits = masked = sop_hits = pairs = 0
    for batch in pretrain_input.heldout_batches(
        spec, batch_size, seed=seed, max_batches=heldout_batches
    ):
        labels = batch["masked_lm_ids"][batch["masked_lm_weights"] > 0]
        hits, masked = hits + int((labels == piece).sum()), masked + labels.size
        sop = batch["next_sentence_labels"].ravel()
        sop_hits, pairs = sop_hits + int((sop == majority).sum()), pairs + sop.size
    return {
        "masked_lm_accuracy": hits / masked if masked else None,
        "sop_accuracy": sop_hits / pairs if pairs else None,
        "piece_id": piece,
        "train_masked_tokens": int(counts.sum()),
        "heldout_masked_tokens": masked,
    }


def _add_counts(counts: np.ndarray, labels: np.ndarray) -> np.ndarray:
    new = np.bincount(labels.astype(np.int64), minlength=len(counts))
    if len(new) > len(counts):
        counts = np.pad(counts, (0, len(new) - len(counts)))
    return counts + new
