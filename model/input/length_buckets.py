"""`--length-buckets` by default: on where it pays, with k chosen from the data's measured padding.

A batch of one length bucket is cut to the bucket's longest length (`model.input.epoch_order`), so
the step computes fewer padding tokens; each bucket's shape compiles the training step once more. On
an accelerator (the Grain input) with padded data, the default is the fewest buckets that compute
within `WITHIN` of the tokens `MAX_BUCKETS` would; on CPU, on TensorFlow's input and for data with
less than `MIN_PADDING` of padding, buckets stay off.
"""

from __future__ import annotations

import itertools
import logging

import numpy as np

from model.input import epoch_order
from model.input.records import DataSpec, decode_record, length_bucket_edges, training_files

logger = logging.getLogger(__name__)

SAMPLE_RECORDS = 2_000  # records read to measure the padding (the first of every training shard)
MAX_BUCKETS = 8  # the most a default chooses: at most this many compilations of the step
MIN_PADDING = 0.05  # less padding than this share of the batches' tokens: buckets stay off
WITHIN = 0.03  # k: the fewest buckets within this share of MAX_BUCKETS' computed tokens


def sample_lengths(spec: DataSpec, records: int = SAMPLE_RECORDS, eval_every: int = 20):
    """The real lengths (non-padding tokens) of up to `records` training records, read round-robin
    from the training shards' starts (int64 array)."""
    files, modulus = training_files(spec, eval_every)

    def open_shard(path: str):
        return epoch_order.shard_records(path, modulus, False)

    lengths = [
        int(np.count_nonzero(decode_record(path, index, record, ("input_mask",))["input_mask"]))
        for path, index, record in itertools.islice(
            epoch_order.interleaved(files, len(files), open_shard), records
        )
    ]
    return np.asarray(lengths, np.int64)


def computed_tokens(lengths: np.ndarray, max_seq_length: int, buckets: int) -> int:
    """Tokens the step computes for records of `lengths`, each padded to its bucket's edge
    (`buckets` 0: every record to `max_seq_length`)."""
    edges = np.asarray(
        length_bucket_edges(max_seq_length, buckets) if buckets else [max_seq_length]
    )
    return int(edges[np.searchsorted(edges, lengths, side="left")].sum())


def choose_buckets(lengths: np.ndarray, max_seq_length: int) -> int:
    """k for records of `lengths`: 0 when their padding is under MIN_PADDING of the tokens, else the
    fewest buckets (2 to MAX_BUCKETS) that compute within WITHIN of the tokens MAX_BUCKETS would."""
    if not len(lengths) or lengths.sum() >= (1 - MIN_PADDING) * len(lengths) * max_seq_length:
        return 0
    best = computed_tokens(lengths, max_seq_length, MAX_BUCKETS)
    return next(
        k
        for k in range(2, MAX_BUCKETS + 1)
        if computed_tokens(lengths, max_seq_length, k) <= (1 + WITHIN) * best
    )


def default_buckets(spec: DataSpec, on_accelerator: bool, grain: bool) -> int:
    """--length-buckets when not given (see the module doc)."""
    if not (on_accelerator and grain):
        return 0
    lengths, seq = sample_lengths(spec), spec.max_seq_length
    buckets = choose_buckets(lengths, seq)
    real = lengths.sum()
    logger.info(
        "--length-buckets %d by default: padding is %.0f%% of the tokens at %d (%d records), "
        "%.0f%% with these buckets",
        buckets,
        100 * (1 - real / max(computed_tokens(lengths, seq, 0), 1)),
        seq,
        len(lengths),
        100 * (1 - real / max(computed_tokens(lengths, seq, buckets), 1)),
    )
    return buckets
