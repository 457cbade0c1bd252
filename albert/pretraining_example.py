"""The pretraining TFRecord format, exactly google-research/albert's, shared by the writer and the
trainer.

Features of each `tf.train.Example` (padding 0):
  input_ids, input_mask, segment_ids, token_boundary: int64 x max_seq_length
  masked_lm_positions, masked_lm_ids: int64 x max_predictions_per_seq
  masked_lm_weights: float x max_predictions_per_seq
  next_sentence_labels: int64 x 1 (SOP: 1 = swapped; NSP: 1 = random B)

`encode_example` writes the protobuf wire format directly with NumPy (several times faster than
building `tf.train.Example` objects); `decode_example` reads any serialized `tf.train.Example` with
the protobuf runtime (no TensorFlow: the JAX input and the shard check use it). Tests check both
against TensorFlow."""

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


def _pad(values, length: int) -> np.ndarray:
    padded = np.zeros(length, dtype=np.int64)
    values = np.asarray(values, dtype=np.int64)
    if len(values) > length:
        raise ValueError(f"{len(values)} values do not fit in {length}")
    padded[: len(values)] = values
    return padded


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
    num_tokens, num_masked = len(input_ids), len(masked_lm_positions)
    mask = np.zeros(max_seq_length, dtype=np.uint8)
    mask[:num_tokens] = 1
    weights = np.zeros(max_predictions_per_seq, dtype="<f4")
    weights[:num_masked] = 1.0
    entries = [
        _entry("input_ids", 0x1A, encode_varints(_pad(input_ids, max_seq_length))),
        _entry("input_mask", 0x1A, mask.tobytes()),
        _entry("segment_ids", 0x1A, _pad(segment_ids, max_seq_length).astype(np.uint8).tobytes()),
        _entry(
            "token_boundary", 0x1A, _pad(token_boundary, max_seq_length).astype(np.uint8).tobytes()
        ),
        _entry(
            "masked_lm_positions",
            0x1A,
            encode_varints(_pad(masked_lm_positions, max_predictions_per_seq)),
        ),
        _entry("masked_lm_ids", 0x1A, encode_varints(_pad(masked_lm_ids, max_predictions_per_seq))),
        _entry("masked_lm_weights", 0x12, weights.tobytes()),
        _entry("next_sentence_labels", 0x1A, varint(int(label))),
    ]
    return length_delimited(1, b"".join(entries))


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
