"""Near-duplicate removal of the segment stage: MinHash signatures, LSH buckets, clusters.

After exact-duplicate documents are dropped, every document with at least one shingle gets a
signature (`pipelines.minhash`); shorter ones are kept and counted (`near_dup_unchecked`). Three
groupings through sorted spill files (pipelines.spill), so memory stays flat:

- band_key(band key, node) -> signature and text start: the members of one LSH bucket meet, in node
  order, and `near_dup_clusters.accepted_pairs` checks them (references of earlier corpora too);
- pair_key(first node, second node) -> similarity and texts: the accepted pairs, a small set, all
  meet in one partition, where `near_dup_clusters.removals` forms the clusters;
- removal_key(key) and dedup.document_record_key(key): a removed document's marker meets its record
  (and sorts before it), which is then dropped and its characters counted.

Outputs the kept documents (key, paragraphs), the audit records of the removed ones and the kept
documents' signature records (`minhash` file format).
"""

from __future__ import annotations

import functools
import itertools
import json
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
    accepted_pairs,
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
_PAIRS_GROUP = b"p"  # every pair key starts with it: all pairs meet in one partition
_REMOVE = b"\x00"  # after a document key: a removal sorts before the document's record
_NO_SIGNATURE, _SIGNATURE = b"\x00", b"\x01"  # a document payload's first byte


def band_key(band: bytes, name: bytes) -> bytes:
    return band + name


def node_of_band_key(sort_key: bytes) -> bytes:
    return sort_key[dedup.GROUP_BYTES :]


def pair_key(first: bytes, second: bytes) -> bytes:
    return _PAIRS_GROUP + first + second


def removal_key(key: bytes) -> bytes:
    return key + _REMOVE


def encode_member(sig: np.ndarray, text: str) -> bytes:
    return sig.astype("<u4").tobytes() + text.encode("utf-8")


def decode_member(name: bytes, payload: bytes, permutations: int) -> Member:
    width = 4 * permutations
    return Member(name, np.frombuffer(payload[:width], "<u4"), payload[width:].decode("utf-8"))


def band_pairs(
    tag: bytes, key: bytes, sig: np.ndarray, text: str, bands: int, rows: int
) -> list[tuple[bytes, bytes]]:
    """The spill pairs that put a document into its LSH buckets."""
    payload, name = encode_member(sig, text), node(tag, key)
    return [(band_key(band, name), payload) for band in minhash.band_keys(sig, bands, rows)]


def document_pair(
    key: bytes, paragraphs: dedup.Paragraphs, sig: np.ndarray | None
) -> tuple[bytes, bytes]:
    """document_record_key, then a flag byte, the signature where there is one, the paragraphs."""
    head = _NO_SIGNATURE if sig is None else _SIGNATURE + sig.astype("<u4").tobytes()
    return dedup.document_record_key(key), head + dedup.encode_paragraphs(paragraphs)


def decode_document(payload: bytes, permutations: int) -> tuple[dedup.Paragraphs, bytes]:
    """The paragraphs and the signature bytes (b"" where none) of a document_pair's payload."""
    width = 1 + 4 * permutations if payload[:1] == _SIGNATURE else 1
    return dedup.decode_paragraphs(payload[width:]), payload[1:width]


def text_start(paragraphs: dedup.Paragraphs) -> str:
    return " ".join(paragraphs)[:TEXT_CHARS]


class Sign(CountingDoFn):
    """(key, paragraphs) -> band pairs; DOCUMENTS: (document_record_key, signature flag, signature
    and paragraphs) for the removal step. Documents without a shingle are counted."""

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
        if sig is None:
            self.inc("near_dup_unchecked", 1)
        else:
            yield from band_pairs(CURRENT, key, sig, text_start(paragraphs), self.bands, self.rows)
        yield beam.pvalue.TaggedOutput(DOCUMENTS, document_pair(key, paragraphs, sig))


def reference_band_pairs(path: str, config: NearDupConfig) -> Iterator[tuple[bytes, bytes]]:
    """The band pairs of every signature in one reference file."""
    for key, sig in minhash.read_signatures(path, config.near_dup_permutations):
        yield from band_pairs(REFERENCE, key, sig, "", config.near_dup_bands, config.near_dup_rows)


def check_buckets(pairs, inc: Counter, permutations: int, threshold: float):
    """band_key, member (grouped by bucket) -> pair_key, [similarity, texts] of accepted pairs."""
    for _, group in itertools.groupby(pairs, key=dedup.group_of):
        members = (
            decode_member(node_of_band_key(sort_key), payload, permutations)
            for sort_key, payload in group
        )
        for pair in accepted_pairs(members, threshold):
            inc("near_duplicate_pairs_checked", 1)
            yield (
                pair_key(pair.first, pair.second),
                json.dumps([pair.similarity, pair.first_text, pair.second_text]).encode("utf-8"),
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


def drop_removed(pairs, inc: Counter, permutations: int):
    """removal_key and document_record_key, grouped by document -> (key, paragraphs, signature
    bytes or b"") of each document not removed; the removed ones' characters are counted."""
    for key, group in itertools.groupby(pairs, key=dedup.group_of):
        removed = False
        for sort_key, payload in group:
            if sort_key == removal_key(key):
                removed = True
                continue
            paragraphs, sig = decode_document(payload, permutations)
            if removed:
                inc("near_duplicate_characters", sum(len(p) for p in paragraphs))
                continue
            yield key, paragraphs, sig


def kept_document(element) -> tuple[bytes, dedup.Paragraphs]:
    key, paragraphs, _ = element
    return key, paragraphs


def signature_records(element) -> Iterator[tuple[bytes, bytes]]:
    """(key, paragraphs, signature bytes) -> key, signature-file record (none without one)."""
    key, _, sig = element
    if sig:
        yield key, key + sig


class NearDeduplicate(beam.PTransform):
    """key, paragraphs -> (kept key, paragraphs; audit records; kept signature records).

    `run_dirs`: three spill directories (buckets, pairs, removals), removed by the stage at the
    end; `reference_files`: signature files of earlier corpora (headers checked by the caller);
    counts join `counts` in `namespace`."""

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
            COUNTS, DOCUMENTS, main="bands"
        )
        self.counts.append(signed[COUNTS])
        references = (
            documents.pipeline
            | "ReferenceFiles" >> beam.Create(self.reference_files)
            | "ReferenceBands" >> beam.FlatMap(reference_band_pairs, config)
        )
        check = functools.partial(
            check_buckets,
            permutations=config.near_dup_permutations,
            threshold=config.near_dup_threshold,
        )
        audit = (
            (signed.bands, references)
            | "CheckBuckets" >> self._merge_sorted(bucket_runs, check, dedup.GROUP_BYTES)
            | "Cluster" >> self._merge_sorted(pair_runs, cluster, len(_PAIRS_GROUP))
        )
        drop = functools.partial(drop_removed, permutations=config.near_dup_permutations)
        kept = (
            audit | "RemovalPairs" >> beam.Map(removal_pair),
            signed[DOCUMENTS],
        ) | "DropRemoved" >> self._merge_sorted(removal_runs, drop, dedup.GROUP_BYTES)
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
