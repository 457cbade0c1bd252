"""The pretraining TFRecord format, exactly google-research/albert's, shared by the writer and the
trainer.

Features of each `tf.train.Example` (padding 0):
  input_ids, input_mask, segment_ids, token_boundary: int64 x max_seq_length
  masked_lm_positions, masked_lm_ids: int64 x max_predictions_per_seq
  masked_lm_weights: float x max_predictions_per_seq
  next_sentence_labels: int64 x 1 (SOP: 1 = swapped; NSP: 1 = random B)

`encode_example` (one instance) and `encode_examples` (a batch at once) write the protobuf wire
format directly with NumPy (several times faster than building `tf.train.Example` objects);
`decode_example` reads any serialized `tf.train.Example` with the protobuf runtime (no TensorFlow:
the JAX input and the shard check use it). Tests check both against TensorFlow."""

from __future__ import annotations

import functools

import numpy as np
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

from albert.protobuf_wire import length_delimited, varint

INT_FEATURES_SEQ = ("input_ids", "input_mask", "segment_ids", "token_boundary")
INT_FEATURES_PRED = ("masked_lm_positions", "masked_lm_ids")
FEATURE_NAMES = INT_FEATURES_SEQ + INT_FEATURES_PRED + ("masked_lm_weights", "next_sentence_labels")


def feature_shapes(max_seq_length: int, max_predictions_per_seq: int) -> dict[str, tuple[str, int]]:
    """name -> (dtype, length) of every feature."""
    shapes = {name: ("int64", max_seq_length) for name in INT_FEATURES_SEQ}
    shapes.update({name: ("int64", max_predictions_per_seq) for name in INT_FEATURES_PRED})
    shapes["masked_lm_weights"] = ("float32", max_predictions_per_seq)
    shapes["next_sentence_labels"] = ("int64", 1)
    return shapes


def feature_spec_json(max_seq_length: int, max_predictions_per_seq: int) -> dict[str, dict]:
    """The spec as JSON for metadata.json: name -> {"dtype", "shape"}."""
    return {
        name: {"dtype": dtype, "shape": [length]}
        for name, (dtype, length) in feature_shapes(max_seq_length, max_predictions_per_seq).items()
    }


def _general_varints(values: np.ndarray) -> bytes:
    width = (int(values.max()).bit_length() + 6) // 7
    shifts = np.arange(0, 7 * width, 7, dtype=np.uint64)
    groups = values[:, None] >> shifts  # [N, width]: the value shifted by 0, 7, 14 ... bits
    present = np.ones_like(groups, dtype=bool)
    present[:, 1:] = groups[:, 1:] > 0
    more = np.zeros_like(present)
    more[:, :-1] = present[:, 1:]
    encoded = ((groups & np.uint64(0x7F)) | (more.astype(np.uint64) << np.uint64(7))).astype(
        np.uint8
    )
    return encoded[present].tobytes()


_TABLE_SIZE = 1 << 16  # ids of any vocabulary up to 65,536 pieces and every position
_TABLE_VALUES = np.arange(_TABLE_SIZE, dtype=np.int64)
_TABLE_PRESENT = np.stack(
    [_TABLE_VALUES >= 0, _TABLE_VALUES >= 1 << 7, _TABLE_VALUES >= 1 << 14], axis=1
)
_TABLE_BYTES = np.stack(
    [
        (_TABLE_VALUES >> shift) & 0x7F | (_TABLE_PRESENT[:, k + 1] << 7 if k < 2 else 0)
        for k, shift in enumerate((0, 7, 14))
    ],
    axis=1,
).astype(np.uint8)


def encode_varints(values: np.ndarray) -> bytes:
    """Packed protobuf varints of non-negative integers below 2**63."""
    values = np.asarray(values)
    if values.size == 0:
        return b""
    top = int(values.max())
    if top < 0x80:
        return values.astype(np.uint8).tobytes()
    if top < _TABLE_SIZE:
        return _TABLE_BYTES[values][_TABLE_PRESENT[values]].tobytes()
    return _general_varints(values.astype(np.uint64))


@functools.lru_cache(maxsize=4096)
def _entry_header(name: str, list_tag: int, size: int) -> bytes:
    # map<string, Feature> entry: key (1), value (2) = Feature{int64_list (3) | float_list (2)} of
    # `size` bytes
    list_header = bytes((0x0A,)) + varint(size)
    feature_header = bytes((list_tag,)) + varint(len(list_header) + size)
    key = length_delimited(1, name.encode())
    value_header = bytes((0x12,)) + varint(len(feature_header) + len(list_header) + size)
    entry_size = len(key) + len(value_header) + len(feature_header) + len(list_header) + size
    return bytes((0x0A,)) + varint(entry_size) + key + value_header + feature_header + list_header


def _entry(name: str, list_tag: int, packed: bytes) -> bytes:
    return _entry_header(name, list_tag, len(packed)) + packed


def _fit(rows: np.ndarray, counts: np.ndarray, length: int) -> np.ndarray:
    """int64 [B, length]: each row's first `counts[b]` values, zero-padded (beyond them `rows` must
    hold zeros)."""
    if counts.max(initial=0) > length:
        raise ValueError(f"{int(counts.max())} values do not fit in {length}")
    fitted = np.zeros((len(rows), length), dtype=np.int64)
    width = min(rows.shape[1], length)
    fitted[:, :width] = rows[:, :width]
    return fitted


def _row_bytes(rows: np.ndarray, dtype) -> list[bytes]:
    """Each row's values as `dtype`, raw (packed varints of values below 128 for uint8)."""
    return [row.tobytes() for row in rows.astype(dtype)]


def _row_varints(rows: np.ndarray) -> list[bytes]:
    """`encode_varints` of each row of a non-negative int64 [B, N] array, in one table lookup."""
    if rows.size == 0 or rows.max() >= _TABLE_SIZE:
        return [encode_varints(row) for row in rows]
    present = _TABLE_PRESENT[rows]  # [B, N, 3]
    flat = _TABLE_BYTES[rows][present].tobytes()
    ends = np.cumsum(np.count_nonzero(present, axis=(1, 2))).tolist()
    return [flat[start:end] for start, end in zip([0, *ends[:-1]], ends)]


def encode_examples(
    input_ids: np.ndarray,
    segment_ids: np.ndarray,
    token_boundary: np.ndarray,
    masked_lm_positions: np.ndarray,
    masked_lm_ids: np.ndarray,
    num_tokens: np.ndarray,
    num_masked: np.ndarray,
    labels: np.ndarray,
    max_seq_length: int,
    max_predictions_per_seq: int,
) -> list[bytes]:
    """Serialized `tf.train.Example`s of a batch: row `b` of the [B, T] arrays holds `num_tokens[b]`
    tokens, of the [B, P] arrays `num_masked[b]` predictions, zeros after them (padded here to
    `max_seq_length` and `max_predictions_per_seq`); `labels` [B]. Row `b`'s bytes are
    `encode_example` of its unpadded values; the varints of the whole batch are encoded at once."""
    num_tokens, num_masked = np.asarray(num_tokens), np.asarray(num_masked)
    seq = np.arange(max_seq_length) < num_tokens[:, None]
    predicted = np.arange(max_predictions_per_seq) < num_masked[:, None]
    columns = (
        ("input_ids", 0x1A, _row_varints(_fit(input_ids, num_tokens, max_seq_length))),
        ("input_mask", 0x1A, _row_bytes(seq, np.uint8)),
        ("segment_ids", 0x1A, _row_bytes(_fit(segment_ids, num_tokens, max_seq_length), np.uint8)),
        (
            "token_boundary",
            0x1A,
            _row_bytes(_fit(token_boundary, num_tokens, max_seq_length), np.uint8),
        ),
        (
            "masked_lm_positions",
            0x1A,
            _row_varints(_fit(masked_lm_positions, num_masked, max_predictions_per_seq)),
        ),
        (
            "masked_lm_ids",
            0x1A,
            _row_varints(_fit(masked_lm_ids, num_masked, max_predictions_per_seq)),
        ),
        ("masked_lm_weights", 0x12, _row_bytes(predicted, "<f4")),
        ("next_sentence_labels", 0x1A, [varint(label) for label in np.asarray(labels).tolist()]),
    )
    return [
        length_delimited(1, b"".join(_entry(name, tag, rows[b]) for name, tag, rows in columns))
        for b in range(len(num_tokens))
    ]


def _one_row(values) -> np.ndarray:
    return np.asarray(values, dtype=np.int64).reshape(1, -1)


def encode_example(
    input_ids: np.ndarray,
    segment_ids: np.ndarray,
    token_boundary: np.ndarray,
    masked_lm_positions: np.ndarray,
    masked_lm_ids: np.ndarray,
    label: int,
    max_seq_length: int,
    max_predictions_per_seq: int,
) -> bytes:
    """A serialized `tf.train.Example` of one instance (unpadded inputs; padded here with 0)."""
    return encode_examples(
        _one_row(input_ids),
        _one_row(segment_ids),
        _one_row(token_boundary),
        _one_row(masked_lm_positions),
        _one_row(masked_lm_ids),
        [len(input_ids)],
        [len(masked_lm_positions)],
        [label],
        max_seq_length,
        max_predictions_per_seq,
    )[0]


# --------------------------------------------------------------------------------------------
# Decoding without TensorFlow: tensorflow/core/example/{example,feature}.proto, declared here in a
# private descriptor pool (same wire format; no clash with TensorFlow's classes in one process).


@functools.cache
def _example_class():
    proto = descriptor_pb2.FileDescriptorProto(
        name="albert_example.proto", package="albert_example", syntax="proto3"
    )
    repeated, optional = (
        descriptor_pb2.FieldDescriptorProto.LABEL_REPEATED,
        descriptor_pb2.FieldDescriptorProto.LABEL_OPTIONAL,
    )
    types = descriptor_pb2.FieldDescriptorProto

    def message(name, *fields, nested=()):
        msg = proto.message_type.add(name=name) if not nested else nested
        for field_name, number, label, kind, type_name, oneof in fields:
            field = msg.field.add(name=field_name, number=number, label=label, type=kind)
            if type_name:
                field.type_name = type_name
            if oneof is not None:
                field.oneof_index = oneof
        return msg

    for name, kind in (
        ("BytesList", types.TYPE_BYTES),
        ("FloatList", types.TYPE_FLOAT),
        ("Int64List", types.TYPE_INT64),
    ):
        message(name, ("value", 1, repeated, kind, None, None))
    feature = message(
        "Feature",
        *(
            (name, number, optional, types.TYPE_MESSAGE, f".albert_example.{kind}", 0)
            for name, number, kind in (
                ("bytes_list", 1, "BytesList"),
                ("float_list", 2, "FloatList"),
                ("int64_list", 3, "Int64List"),
            )
        ),
    )
    feature.oneof_decl.add(name="kind")
    features = message(
        "Features",
        ("feature", 1, repeated, types.TYPE_MESSAGE, ".albert_example.Features.FeatureEntry", None),
    )
    entry = features.nested_type.add(name="FeatureEntry")
    entry.options.map_entry = True
    message(
        "",
        ("key", 1, optional, types.TYPE_STRING, None, None),
        ("value", 2, optional, types.TYPE_MESSAGE, ".albert_example.Feature", None),
        nested=entry,
    )
    message(
        "Example", ("features", 1, optional, types.TYPE_MESSAGE, ".albert_example.Features", None)
    )
    pool = descriptor_pool.DescriptorPool()
    pool.Add(proto)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName("albert_example.Example"))


def decode_example(serialized: bytes, names=None) -> dict[str, np.ndarray]:
    """The features of a serialized `tf.train.Example` (all, or those of `names` it has): int64
    lists as int64 arrays, float lists as float32, bytes lists as lists of bytes. Raises
    google.protobuf.message.DecodeError on bad bytes."""
    features = _example_class().FromString(serialized).features.feature
    decoded = {}
    for name in features if names is None else [name for name in names if name in features]:
        feature = features[name]
        kind = feature.WhichOneof("kind")
        if kind == "int64_list":
            values = feature.int64_list.value
            decoded[name] = np.fromiter(values, np.int64, len(values))
        elif kind == "float_list":
            values = feature.float_list.value
            decoded[name] = np.fromiter(values, np.float32, len(values))
        elif kind == "bytes_list":
            decoded[name] = list(feature.bytes_list.value)
        else:
            decoded[name] = np.zeros(0, np.int64)
    return decoded
