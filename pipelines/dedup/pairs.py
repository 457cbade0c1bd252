"""The reduces of near-duplicate removal's groupings (`pipelines.dedup.near` wires them into
`spill.MergeSorted`): the LSH buckets' candidates, the two joins that bring a candidate pair's
shingle sets together and check it, the clusters of the accepted pairs, and the removal of the
documents they name.

Each reduce takes the (sort key, payload) pairs of one partition in key order (`near_dup_keys`
names the keys) and a counter; it yields spill pairs for the next grouping, or audit records or
documents, as its docstring says. Module-level functions, so Beam pickles them by name.
"""

from __future__ import annotations

import itertools

import numpy as np

from pipelines.common.runner import Counter
from pipelines.dedup import exact as dedup
from pipelines.dedup.clusters import (
    NODE_BYTES,
    Member,
    Removal,
    accepted,
    candidate_pairs,
    is_reference,
    key_of,
    removals,
)
from pipelines.dedup.keys import (
    decode_document,
    decode_pair,
    decode_shingles,
    encode_pair,
    join_key,
    node_of_band_key,
    pair_key,
    removal_key,
)


def _node_of(pair: tuple[bytes, bytes]) -> bytes:
    return pair[0][:NODE_BYTES]


def _sort_key(pair: tuple[bytes, bytes]) -> bytes:
    return pair[0]


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
                yield pair_key(first, name), encode_pair(similarity, first_text, text)


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
