"""Near-duplicate removal of the segment stage: MinHash LSH candidates, their exact check, clusters.

After exact-duplicate documents are dropped, every document with at least one shingle gets a
signature and a shingle set (`pipelines.minhash`); shorter ones are kept and counted
(`near_dup_unchecked`). Five groupings through sorted spill files (pipelines.spill), so memory
stays flat and no document's shingles travel more than a few times:

- band_key(band key, node) -> signature: the members of one LSH bucket meet, in node order, and
  `near_dup_clusters.candidate_pairs` names the candidates (references of earlier corpora too);
- join_key(first node) -> text start and shingle set, before join_key(first, second) of each
  candidate (several bands' copies of one meet and count once): the first document's set goes on
  to the second's node;
- join_key(second node) -> its own text start and shingle set, before each first document's: the
  pair is checked by the exact Jaccard of the two sets (`near_dup_clusters.accepted`);
- pair_key(first node, second node) -> similarity and texts: the accepted pairs, a small set, all
  meet in one partition, where `near_dup_clusters.removals` forms the clusters;
- removal_key(key) and dedup.document_record_key(key): a removed document's marker meets its record
  (and sorts before it), which is then dropped and its characters counted.

The two joins spill beside the accepted pairs' runs (segment gives the stage three run
directories; run files are named uniquely and each grouping merges only its own). Outputs the kept
documents (key, paragraphs), the audit records of the removed ones and the kept documents'
signature records (`minhash` file format: signature and shingle set).
"""

from __future__ import annotations

import functools
import itertools
import json
import struct
from collections.abc import Iterator

import apache_beam as beam
import numpy as np

from albert.fs import join
from pipelines import dedup, minhash, spill
from pipelines.near_dup_clusters import (
    CURRENT,
    NODE_BYTES,
    REFERENCE,
    Member,
    Pair,
    Removal,
    accepted,
    candidate_pairs,
    is_reference,
    key_of,
    node,
    removals,
)
from pipelines.near_dup_config import (
    NearDupConfig,
    reference_files,
    settings_summary,
)
from pipelines.runner import COUNTS, Counter, CountingDoFn
from pipelines.shards import WriteShards

TEXT_CHARS = 100
"""How much of a document's text the audit shows."""
DOCUMENTS = "documents"
SHINGLES = "shingles"
_PAIRS_GROUP = b"p"  # every pair key starts with it: all pairs meet in one partition
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
    return _PAIRS_GROUP + first + second


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


class Sign(CountingDoFn):
    """(key, paragraphs) -> band pairs; SHINGLES: the document's join record; DOCUMENTS:
    (document_record_key, signature flag, signature record and paragraphs) for the removal step.
    Documents without a shingle are counted."""

    def __init__(self, config: NearDupConfig, namespace: str):
        super().__init__(namespace)
        self.settings = config.minhash_settings()
        self.bands, self.rows = config.near_dup_bands, config.near_dup_rows

    def setup(self):
        self.parameters = minhash.permutation_parameters(
            self.settings.permutations, self.settings.seed
        )

    def process(self, document):
        key, paragraphs = document
        hashes = minhash.shingle_hashes(" ".join(paragraphs), self.settings.ngram)
        sig = minhash.signature(hashes, self.parameters)
        shingles = None
        if sig is None:
            self.inc("near_dup_unchecked", 1)
        else:
            shingles = minhash.shingle_set(hashes)
            yield from band_pairs(CURRENT, key, sig, self.bands, self.rows)
            record = encode_shingles(text_start(paragraphs), shingles)
            yield beam.pvalue.TaggedOutput(SHINGLES, (join_key(node(CURRENT, key)), record))
        yield beam.pvalue.TaggedOutput(DOCUMENTS, document_pair(key, paragraphs, sig, shingles))


def reference_pairs(path: str, config: NearDupConfig) -> Iterator[tuple[bytes, bytes]]:
    """The band pairs of every signature in one reference file, then (SHINGLES) its join record
    (no text: a reference is never output)."""
    for key, sig, shingles in minhash.read_signatures(path, config.near_dup_permutations):
        yield from band_pairs(REFERENCE, key, sig, config.near_dup_bands, config.near_dup_rows)
        record = encode_shingles("", shingles)
        yield beam.pvalue.TaggedOutput(SHINGLES, (join_key(node(REFERENCE, key)), record))


def check_buckets(pairs, inc: Counter, permutations: int, threshold: float):
    """band_key, signature (grouped by bucket) -> join_key(first, second), b"" of each candidate
    (once per bucket it shares)."""
    for _, group in itertools.groupby(pairs, key=dedup.group_of):
        members = (
            Member(node_of_band_key(sort_key), np.frombuffer(payload, "<u4", permutations))
            for sort_key, payload in group
        )
        for first, second in candidate_pairs(members, threshold):
            yield join_key(first, second), b""


def _node_of(pair: tuple[bytes, bytes]) -> bytes:
    return pair[0][:NODE_BYTES]


def send_first(pairs, inc: Counter):
    """join_key(node): record, then join_key(node, second) of its candidates (grouped by node) ->
    join_key(second, node): the node's record, once per distinct candidate."""
    for name, group in itertools.groupby(pairs, key=_node_of):
        record = b""
        for sort_key, same in itertools.groupby(group, key=_sort_key):
            if len(sort_key) == NODE_BYTES:
                record = next(same)[1]  # a reference given twice: one of its equal records
                continue
            inc("near_duplicate_candidates", 1)
            yield join_key(sort_key[NODE_BYTES:], name), record


def check_pairs(pairs, inc: Counter, threshold: float):
    """join_key(node): record, then join_key(node, first): the first's record (grouped by node)
    -> pair_key(first, node), [similarity, texts] of each pair accepted by its exact Jaccard."""
    for name, group in itertools.groupby(pairs, key=_node_of):
        text, shingles = "", np.empty(0, "<u4")
        for sort_key, payload in group:
            if len(sort_key) == NODE_BYTES:
                text, shingles = decode_shingles(payload)
                continue
            first = sort_key[NODE_BYTES:]
            first_text, first_shingles = decode_shingles(payload)
            similarity = accepted(first_shingles, shingles, threshold)
            if similarity is not None:
                inc("near_duplicate_pairs_accepted", 1)
                yield (
                    pair_key(first, name),
                    json.dumps([similarity, first_text, text]).encode("utf-8"),
                )


def decode_pair(sort_key: bytes, payload: bytes) -> Pair:
    first = sort_key[1 : 1 + NODE_BYTES]
    second = sort_key[1 + NODE_BYTES :]
    similarity, first_text, second_text = json.loads(payload)
    return Pair(first, second, similarity, first_text, second_text)


def audit_record(removal: Removal) -> dict:
    """One line of near_duplicates.jsonl (keys in hex; `reference`: the kept document is in a
    reference corpus, not in this output)."""
    return {
        "removed": key_of(removal.node).hex(),
        "removed_text": removal.text,
        "duplicate_of": key_of(removal.duplicate_of).hex(),
        "duplicate_of_text": removal.duplicate_of_text,
        "similarity": round(removal.similarity, 4),
        "kept": key_of(removal.kept).hex(),
        "reference": is_reference(removal.kept),
    }


def cluster(pairs, inc: Counter):
    """pair_key, [similarity, texts] (all in one partition) -> the audit record of each removal."""
    unique = (decode_pair(*next(group)) for _, group in itertools.groupby(pairs, key=_sort_key))
    removed, clusters = removals(unique)
    inc("near_duplicate_clusters", clusters)
    inc("skipped_near_duplicate", len(removed))
    inc("near_duplicate_of_reference", sum(is_reference(r.kept) for r in removed))
    for removal in removed:
        yield audit_record(removal)


def _sort_key(pair: tuple[bytes, bytes]) -> bytes:
    return pair[0]


def removal_pair(record: dict) -> tuple[bytes, bytes]:
    """An audit record -> removal_key, b"": the marker that drops the document."""
    return removal_key(bytes.fromhex(record["removed"])), b""


def drop_removed(pairs, inc: Counter):
    """removal_key and document_record_key, grouped by document -> (key, paragraphs, signature
    record or b"") of each document not removed; the removed ones' characters are counted."""
    for key, group in itertools.groupby(pairs, key=dedup.group_of):
        removed = False
        for sort_key, payload in group:
            if sort_key == removal_key(key):
                removed = True
                continue
            paragraphs, record = decode_document(payload)
            if removed:
                inc("near_duplicate_characters", sum(len(p) for p in paragraphs))
                continue
            yield key, paragraphs, record


def kept_document(element) -> tuple[bytes, dedup.Paragraphs]:
    key, paragraphs, _ = element
    return key, paragraphs


def signature_records(element) -> Iterator[tuple[bytes, bytes]]:
    """(key, paragraphs, signature record) -> key, signature-file record (none without one)."""
    key, _, record = element
    if record:
        yield key, record


class NearDeduplicate(beam.PTransform):
    """key, paragraphs -> (kept key, paragraphs; audit records; kept signature records).

    `run_dirs`: three spill directories (buckets; the joins and pairs; removals), removed by the
    stage at the end; `reference_files`: signature files of earlier corpora (headers checked by
    the caller); counts join `counts` in `namespace`."""

    def __init__(
        self,
        config: NearDupConfig,
        run_dirs: list[str],
        reference_files: list[str],
        counts: list,
        namespace: str,
    ):
        super().__init__()
        self.config, self.run_dirs, self.reference_files = config, run_dirs, reference_files
        self.counts, self.namespace = counts, namespace

    def _merge_sorted(self, run_dir: str, reduce, group_bytes: int):
        return spill.MergeSorted(
            run_dir, reduce, group_bytes=group_bytes, counts=self.counts, namespace=self.namespace
        )

    def expand(self, documents):
        config = self.config
        bucket_runs, pair_runs, removal_runs = self.run_dirs
        signed = documents | "Sign" >> beam.ParDo(Sign(config, self.namespace)).with_outputs(
            COUNTS, SHINGLES, DOCUMENTS, main="bands"
        )
        self.counts.append(signed[COUNTS])
        references = (
            documents.pipeline
            | "ReferenceFiles" >> beam.Create(self.reference_files)
            | "ReferencePairs"
            >> beam.FlatMap(reference_pairs, config).with_outputs(SHINGLES, main="bands")
        )
        check = functools.partial(
            check_buckets,
            permutations=config.near_dup_permutations,
            threshold=config.near_dup_threshold,
        )
        candidates = (signed.bands, references.bands) | "CheckBuckets" >> self._merge_sorted(
            bucket_runs, check, dedup.GROUP_BYTES
        )
        firsts = (
            candidates,
            signed[SHINGLES],
            references[SHINGLES],
        ) | "SendFirst" >> self._merge_sorted(pair_runs, send_first, NODE_BYTES)
        accept = functools.partial(check_pairs, threshold=config.near_dup_threshold)
        audit = (
            (firsts, signed[SHINGLES])
            | "CheckPairs" >> self._merge_sorted(pair_runs, accept, NODE_BYTES)
            | "Cluster" >> self._merge_sorted(pair_runs, cluster, len(_PAIRS_GROUP))
        )
        kept = (
            audit | "RemovalPairs" >> beam.Map(removal_pair),
            signed[DOCUMENTS],
        ) | "DropRemoved" >> self._merge_sorted(removal_runs, drop_removed, dedup.GROUP_BYTES)
        return (
            kept | "KeptDocuments" >> beam.Map(kept_document),
            audit,
            kept | "KeptSignatures" >> beam.FlatMap(signature_records),
        )


def apply(documents, config: NearDupConfig, run_dirs, output_dir, num_shards, counts, namespace):
    """(the documents left, the keyword arguments segment's stats writer takes) of `documents` with
    near-duplicates removed where `config.near_dedup`, unchanged otherwise. The kept documents'
    signatures are written beside the shards (`minhash` file format)."""
    if not config.near_dedup:
        return documents, {"near_duplicates": [], "near_dup_settings": None}
    transform = NearDeduplicate(config, run_dirs, reference_files(config), counts, namespace)
    kept, audit, signatures = documents | "NearDeduplicate" >> transform
    written = signatures | "WriteSignatures" >> WriteShards(
        join(output_dir, minhash.SIGNATURES), num_shards, minhash.SIGNATURE_SUFFIX
    )
    return kept, {
        "near_duplicates": beam.pvalue.AsList(audit),
        "near_dup_settings": settings_summary(config),
        "near_dup_signatures": beam.pvalue.AsList(written),
    }
