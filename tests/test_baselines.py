"""model.evaluation.baselines: the majority predictions the held-out figures are read against,
checked by hand."""

import numpy as np
import tensorflow as tf
from pretrain_testdata import write_shards

from model.evaluation.baselines import unigram_baseline
from model.input import tf_data as pretrain_data


def _labels(files):
    masked, order = [], []
    for raw in tf.data.TFRecordDataset(files):
        example = tf.io.parse_single_example(
            raw,
            {
                "masked_lm_ids": tf.io.FixedLenFeature([5], tf.int64),
                "masked_lm_weights": tf.io.FixedLenFeature([5], tf.float32),
                "next_sentence_labels": tf.io.FixedLenFeature([1], tf.int64),
            },
        )
        masked += (
            example["masked_lm_ids"].numpy()[example["masked_lm_weights"].numpy() > 0].tolist()
        )
        order += example["next_sentence_labels"].numpy().tolist()
    return np.array(masked), np.array(order)


def test_unigram_baseline_predicts_the_most_frequent_training_piece(tmp_path):
    data = write_shards(tmp_path / "d", num_shards=3, per_shard=40, vocab=7)
    spec = pretrain_data.inspect_data(str(data))
    train_files, heldout_files, _ = pretrain_data.split_files(spec)
    train_masked, train_order = _labels(train_files)
    held_masked, held_order = _labels(heldout_files)
    piece = int(np.bincount(train_masked).argmax())
    baseline = unigram_baseline(str(data), batch_size=8)  # every training batch: 80 records / 8
    assert baseline["piece_id"] == piece and baseline["train_masked_tokens"] == len(train_masked)
    assert baseline["masked_lm_accuracy"] == np.mean(held_masked == piece)
    assert baseline["sop_accuracy"] == np.mean(held_order == np.bincount(train_order).argmax())
