"""albert.pretraining_example: the hand-written tf.train.Example encoder against TensorFlow's
parser."""

from __future__ import annotations

import numpy as np
import pytest

from albert import pretraining_example as features
from albert.protobuf_wire import varint


def test_encoded_examples_parse_to_the_padded_values():
    import tensorflow as tf
    from pretrain_testdata import feature_spec  # heavy: imports TensorFlow

    rng = np.random.default_rng(0)
    serialized, expected = [], []
    for length in (5, 17, 32):
        ids = rng.integers(0, 300_000, length)
        segments = (np.arange(length) > length // 2).astype(np.int64)
        boundary = rng.integers(0, 2, length)
        positions = np.sort(rng.choice(length, 3, replace=False))
        serialized.append(
            features.encode_example(
                ids, segments, boundary, positions, ids[positions], length % 2, 32, 4
            )
        )
        pad = lambda values, n: np.concatenate([values, np.zeros(n - len(values), np.int64)])
        expected.append(
            {
                "input_ids": pad(ids, 32),
                "input_mask": pad(np.ones(length, np.int64), 32),
                "segment_ids": pad(segments, 32),
                "token_boundary": pad(boundary, 32),
                "masked_lm_positions": pad(positions, 4),
                "masked_lm_ids": pad(ids[positions], 4),
                "masked_lm_weights": np.array([1, 1, 1, 0], np.float32),
                "next_sentence_labels": [length % 2],
            }
        )
    parsed = tf.io.parse_example(serialized, feature_spec(32, 4))
    assert sorted(parsed) == sorted(features.FEATURE_NAMES)
    for i, values in enumerate(expected):
        for name, value in values.items():
            np.testing.assert_array_equal(parsed[name][i].numpy(), value, err_msg=name)


@pytest.mark.parametrize(
    "values", [[], [0], [127], [128, 16383, 16384], [2**21, 2**35, 2**56, 2**63 - 1]]
)
def test_varints_are_protobufs(values):
    import tensorflow as tf

    feature = tf.train.Feature(int64_list=tf.train.Int64List(value=values))
    packed = feature.int64_list.SerializeToString()
    assert packed == (
        b"\x0a"
        + varint(len(features.encode_varints(np.array(values, np.uint64))))
        + features.encode_varints(np.array(values, np.uint64))
        if values
        else b""
    )


def test_too_long_input_is_an_error():
    with pytest.raises(ValueError):
        features.encode_example(np.arange(10), np.zeros(10), np.zeros(10), [], [], 0, 8, 2)


def test_feature_spec_json_matches_the_spec():
    import tensorflow as tf
    from pretrain_testdata import feature_spec  # heavy: imports TensorFlow

    spec = feature_spec(128, 20)
    as_json = features.feature_spec_json(128, 20)
    assert sorted(spec) == sorted(as_json)
    for name, fixed in spec.items():
        assert list(fixed.shape) == as_json[name]["shape"]
        assert fixed.dtype == (tf.float32 if as_json[name]["dtype"] == "float32" else tf.int64)


def test_decoder_reads_what_tensorflow_reads():
    """decode_example (no TensorFlow) against tf.train.Example: our encoder's records and TF's own,
    with unpacked lists, a float list, a bytes list and an empty feature."""
    import tensorflow as tf

    ids = np.array([2, 300_000, 2**40, 5, 3])
    ours = features.encode_example(ids, [0, 0, 1, 1, 1], [1, 1, 0, 1, 1], [1], [300_000], 1, 8, 2)
    theirs = tf.train.Example(
        features=tf.train.Features(
            feature={
                "a": tf.train.Feature(int64_list=tf.train.Int64List(value=[-1, 0, 2**62])),
                "b": tf.train.Feature(float_list=tf.train.FloatList(value=[0.5, -2.25])),
                "c": tf.train.Feature(bytes_list=tf.train.BytesList(value=[b"x", b""])),
                "d": tf.train.Feature(),
            }
        )
    ).SerializeToString()
    for record in (ours, theirs):
        expected = tf.train.Example.FromString(record).features.feature
        decoded = features.decode_example(record)
        assert sorted(decoded) == sorted(expected)
        for name, feature in expected.items():
            kind = feature.WhichOneof("kind")
            values = list(getattr(feature, kind).value) if kind else []
            got = decoded[name]
            assert (got if isinstance(got, list) else got.tolist()) == values, name
    assert features.decode_example(ours)["masked_lm_weights"].dtype == np.float32
    assert sorted(features.decode_example(ours, ("input_ids", "absent"))) == ["input_ids"]
    with pytest.raises(Exception, match="(?i)pars|decod"):
        features.decode_example(b"\x0a\xff\xff")


@pytest.mark.parametrize("top", [100, 8_000, 300_000])
def test_a_batch_encodes_as_each_row_alone(top):
    """encode_examples of zero-padded rows = encode_example of each row's own values (the
    one-table path below 2**16 and the general one above), with and without predictions."""
    rng = np.random.default_rng(top)
    lengths, counts = np.array([5, 17, 1, 32]), np.array([3, 0, 1, 4])
    rows = [rng.integers(0, top, length) for length in lengths]
    segments = [(np.arange(length) > length // 2).astype(np.int64) for length in lengths]
    boundaries = [rng.integers(0, 2, length) for length in lengths]
    positions = [
        np.sort(rng.choice(length, count, replace=False)) for length, count in zip(lengths, counts)
    ]
    labels = [1, 0, 1, 0]
    padded = lambda arrays, width: np.stack(
        [np.concatenate([a, np.zeros(width - len(a), np.int64)]) for a in arrays]
    )
    masked_ids = [row[p] for row, p in zip(rows, positions)]
    batch = features.encode_examples(
        padded(rows, 40),
        padded(segments, 40),
        padded(boundaries, 40),
        padded(positions, 4),
        padded(masked_ids, 4),
        lengths,
        counts,
        labels,
        32,
        4,
    )
    for b in range(len(lengths)):
        assert batch[b] == features.encode_example(
            rows[b], segments[b], boundaries[b], positions[b], masked_ids[b], labels[b], 32, 4
        )
    with pytest.raises(ValueError):
        features.encode_examples(
            padded(rows, 40),
            *[padded(rows, 40)] * 2,
            padded(positions, 4),
            padded(masked_ids, 4),
            lengths,
            counts,
            labels,
            16,
            4,
        )
