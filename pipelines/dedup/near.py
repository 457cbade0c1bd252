"""Near-duplicate removal of the segment stage: MinHash LSH candidates, their exact check, clusters.

After exact-duplicate documents are dropped, every document with at least one shingle gets a
signature and a shingle set (`pipelines.dedup.minhash`); shorter ones are kept and counted
(`near_dup_unchecked`). Five groupings through sorted spill files (pipelines.common.spill), so
memory stays flat and no document's shingles travel more than a few times:

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

`pipelines.dedup.keys` encodes the keys and payloads and `pipelines.dedup.pairs` holds the
groupings' reduces; this module signs the documents and wires the groupings. The two joins spill
beside the accepted pairs' runs (segment gives the stage three run directories; run files are named
uniquely and each grouping merges only its own). Outputs the kept documents (key, paragraphs), the
audit records of the removed ones and the kept documents' signature records (`minhash` file
format: signature and shingle set).
"""

from __future__ import annotations

import functools
from collections.abc import Iterator

import apache_beam as beam

from albert.fs import join
from pipelines.common import spill
from pipelines.common.runner import COUNTS, CountingDoFn
from pipelines.common.shards import WriteShards
from pipelines.dedup import exact as dedup
from pipelines.dedup import minhash
from pipelines.dedup.clusters import CURRENT, NODE_BYTES, REFERENCE, node
from pipelines.dedup.keys import (
    PAIRS_GROUP,
    band_pairs,
    document_pair,
    encode_shingles,
    join_key,
    text_start,
)
from pipelines.dedup.near_config import NearDupConfig, reference_files, settings_summary
from pipelines.dedup.pairs import (
    check_buckets,
    check_pairs,
    cluster,
    drop_removed,
    removal_pair,
    send_first,
)

DOCUMENTS = "documents"
SHINGLES = "shingles"


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
            | "Cluster" >> self._merge_sorted(pair_runs, cluster, len(PAIRS_GROUP))
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
