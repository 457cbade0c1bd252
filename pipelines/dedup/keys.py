"""The keys and payloads of near-duplicate removal's five groupings (`pipelines.dedup.near`).

Every grouping is a sorted spill merge (`pipelines.common.spill`): a key's first bytes name its
group, the rest orders the group's records. The keys:

- band_key(band, node): a document in one LSH bucket (group: the band key, `dedup.GROUP_BYTES`);
- join_key(node) and join_key(node, other): a node's own record (sorts first) and a candidate
  pair's, grouped by the node (`near_dup_clusters.NODE_BYTES`);
- pair_key(first, second): an accepted pair, all of them in one group (`PAIRS_GROUP`);
- removal_key(key): a removed document's marker, sorting just before its
  `dedup.document_record_key`.

The payloads: a signature (uint32, little-endian); encode_shingles (a text start and a shingle
set); document_pair (a flag, the signature record where there is one, the paragraphs); a pair's
JSON [similarity, first text, second text]. Every decode_* reads what its encoder wrote.
"""

from __future__ import annotations

import json
import struct

import numpy as np

from pipelines.dedup import exact as dedup
from pipelines.dedup import minhash
from pipelines.dedup.clusters import NODE_BYTES, Pair, node

TEXT_CHARS = 100
"""How much of a document's text the audit shows."""
PAIRS_GROUP = b"p"
"""Every pair key starts with it: all pairs meet in one partition."""
_REMOVE = b"\x00"  # after a document key: a removal sorts before the document's record
_NO_SIGNATURE, _SIGNATURE = b"\x00", b"\x01"  # a document payload's first byte
_COUNT = struct.Struct("<I")  # how many shingles, or how many bytes of text, follow


def band_key(band: bytes, name: bytes) -> bytes:
    return band + name


def node_of_band_key(sort_key: bytes) -> bytes:
    return sort_key[dedup.GROUP_BYTES :]


def join_key(name: bytes, other: bytes = b"") -> bytes:
    """A node's own record (`other` empty: it sorts first) or a pair's, in the node's group."""
    return name + other


def pair_key(first: bytes, second: bytes) -> bytes:
    return PAIRS_GROUP + first + second


def removal_key(key: bytes) -> bytes:
    return key + _REMOVE


def band_pairs(tag: bytes, key: bytes, sig: np.ndarray, bands: int, rows: int):
    """The spill pairs that put a document into its LSH buckets."""
    payload, name = sig.astype("<u4").tobytes(), node(tag, key)
    return [(band_key(band, name), payload) for band in minhash.band_keys(sig, bands, rows)]


def encode_shingles(text: str, shingles: np.ndarray) -> bytes:
    """A join payload: the length of the text start, the text start, the shingle set."""
    data = text.encode("utf-8")
    return _COUNT.pack(len(data)) + data + shingles.astype("<u4").tobytes()


def decode_shingles(payload: bytes) -> tuple[str, np.ndarray]:
    (length,) = _COUNT.unpack_from(payload)
    start = _COUNT.size + length
    return payload[_COUNT.size : start].decode("utf-8"), np.frombuffer(payload, "<u4", -1, start)


def document_pair(
    key: bytes, paragraphs: dedup.Paragraphs, sig: np.ndarray | None, shingles: np.ndarray | None
) -> tuple[bytes, bytes]:
    """document_record_key, then a flag byte, the signature record where there is one (the
    `minhash` file's, key included), the paragraphs."""
    if sig is None:
        head = _NO_SIGNATURE
    else:
        record = minhash.signature_record(key, sig, shingles)
        head = _SIGNATURE + _COUNT.pack(len(record)) + record
    return dedup.document_record_key(key), head + dedup.encode_paragraphs(paragraphs)


def decode_document(payload: bytes) -> tuple[dedup.Paragraphs, bytes]:
    """The paragraphs and the signature record (b"" where none) of a document_pair's payload."""
    if payload[:1] == _NO_SIGNATURE:
        return dedup.decode_paragraphs(payload[1:]), b""
    (length,) = _COUNT.unpack_from(payload, 1)
    start = 1 + _COUNT.size
    return dedup.decode_paragraphs(payload[start + length :]), payload[start : start + length]


def text_start(paragraphs: dedup.Paragraphs) -> str:
    return " ".join(paragraphs)[:TEXT_CHARS]


def encode_pair(similarity: float, first_text: str, second_text: str) -> bytes:
    """An accepted pair's payload: JSON [similarity, first text, second text]."""
    return json.dumps([similarity, first_text, second_text]).encode("utf-8")


def decode_pair(sort_key: bytes, payload: bytes) -> Pair:
    """The Pair of a pair_key and its encode_pair payload."""
    first = sort_key[len(PAIRS_GROUP) : len(PAIRS_GROUP) + NODE_BYTES]
    second = sort_key[len(PAIRS_GROUP) + NODE_BYTES :]
    similarity, first_text, second_text = json.loads(payload)
    return Pair(first, second, similarity, first_text, second_text)
