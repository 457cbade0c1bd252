"""De-duplication of the segment stage: exact-duplicate documents, then repeated paragraphs
(near-duplicate documents, pipelines.dedup.near, are removed between the two).

Both group through sorted spill files (pipelines.common.spill): every spill key starts with an
8-byte group, so a reduce sees each group's records in key order and streams. The keys are built and
read only by the codec below:

- content_key(content hash, document key): the copies of one text meet, smallest key first;
- paragraph_key(paragraph hash, document key, index): the occurrences of one paragraph meet, first
  by (key, index) first;
- repeat_key(document key, index) and document_record_key(document key): a document's repeated
  paragraphs meet its record, and sort before it.

Documents are (key, paragraphs): key is segment's 8-byte document key, paragraphs normalised text.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import NamedTuple

import apache_beam as beam

from pipelines.common import spill, text_cleaning
from pipelines.common.runner import Counter

GROUP_BYTES = 8
"""The group every spill key starts with: a content hash, a paragraph hash or a document key."""
INDEX_BYTES = 4
_REPEAT, _DOCUMENT = b"\x00", b"\x01"  # after a document key: its repeats sort before its record

Paragraphs = tuple[str, ...]
SpillPair = tuple[bytes, bytes]  # sort key, payload


class ParagraphOccurrence(NamedTuple):
    """Where a paragraph occurs: a document's key and the paragraph's index in it."""

    key: bytes
    index: int


def content_key(content_hash: int, key: bytes) -> bytes:
    return content_hash.to_bytes(GROUP_BYTES, "big") + key


def key_of_content_key(sort_key: bytes) -> bytes:
    return sort_key[GROUP_BYTES:]


def paragraph_key(paragraph_hash: int, occurrence: ParagraphOccurrence) -> bytes:
    return (
        paragraph_hash.to_bytes(GROUP_BYTES, "big")
        + occurrence.key
        + occurrence.index.to_bytes(INDEX_BYTES, "big")
    )


def occurrence_of_paragraph_key(sort_key: bytes) -> ParagraphOccurrence:
    return ParagraphOccurrence(
        sort_key[GROUP_BYTES : 2 * GROUP_BYTES], int.from_bytes(sort_key[2 * GROUP_BYTES :], "big")
    )


def repeat_key(occurrence: ParagraphOccurrence) -> bytes:
    return occurrence.key + _REPEAT + occurrence.index.to_bytes(INDEX_BYTES, "big")


def document_record_key(key: bytes) -> bytes:
    return key + _DOCUMENT


def repeated_index(sort_key: bytes) -> int | None:
    """The paragraph index of a repeat_key; None for a document_record_key."""
    if sort_key[GROUP_BYTES : GROUP_BYTES + 1] == _DOCUMENT:
        return None
    return int.from_bytes(sort_key[GROUP_BYTES + 1 :], "big")


def group_of(pair: SpillPair) -> bytes:
    return pair[0][:GROUP_BYTES]


def encode_paragraphs(paragraphs: Paragraphs) -> bytes:
    return "\n".join(paragraphs).encode("utf-8")  # normalised paragraphs hold no line break


def decode_paragraphs(data: bytes) -> Paragraphs:
    return tuple(data.decode("utf-8").split("\n"))


def content_pair(document: tuple[bytes, Paragraphs]) -> SpillPair:
    """key, paragraphs -> content_key, paragraphs."""
    key, paragraphs = document
    return (
        content_key(text_cleaning.content_hash(paragraphs), key),
        encode_paragraphs(paragraphs),
    )


def first_of_each_content(pairs: Iterator[SpillPair], inc: Counter):
    """content_key, paragraphs -> key, paragraphs of the smallest key of each content; the other
    copies are counted."""
    for _, group in itertools.groupby(pairs, key=group_of):
        copies = 0
        for sort_key, payload in group:
            if not copies:
                yield key_of_content_key(sort_key), decode_paragraphs(payload)
            copies += 1
        if copies > 1:
            inc("skipped_duplicate_document", copies - 1)


def paragraph_refs(document: tuple[bytes, Paragraphs], min_chars: int) -> Iterator[SpillPair]:
    """key, paragraphs -> paragraph_key, b"" of every paragraph long enough to de-duplicate."""
    key, paragraphs = document
    for index, paragraph in enumerate(paragraphs):
        if len(paragraph) >= min_chars:
            occurrence = ParagraphOccurrence(key, index)
            yield paragraph_key(text_cleaning.paragraph_hash(paragraph), occurrence), b""


def repeated_paragraphs(pairs: Iterator[SpillPair], inc: Counter) -> Iterator[SpillPair]:
    """paragraph_key, b"" -> repeat_key, b"" of every occurrence of a paragraph after its first."""
    for _, group in itertools.groupby(pairs, key=group_of):
        for position, (sort_key, _) in enumerate(group):
            if position:
                yield repeat_key(occurrence_of_paragraph_key(sort_key)), b""


def document_pair(document: tuple[bytes, Paragraphs]) -> SpillPair:
    """key, paragraphs -> document_record_key, paragraphs (after the key's repeat_keys)."""
    key, paragraphs = document
    return document_record_key(key), encode_paragraphs(paragraphs)


def drop_repeated_paragraphs(pairs: Iterator[SpillPair], inc: Counter):
    """repeat_key, b"" and document_record_key, paragraphs -> key, paragraphs without the repeats;
    documents left empty are counted."""
    for key, group in itertools.groupby(pairs, key=group_of):
        drop: set[int] = set()
        for sort_key, payload in group:
            index = repeated_index(sort_key)
            if index is not None:
                drop.add(index)
                continue
            paragraphs = decode_paragraphs(payload)
            if drop:
                inc("paragraphs_duplicate", len(drop))
                paragraphs = tuple(p for i, p in enumerate(paragraphs) if i not in drop)
            if not paragraphs:
                inc("skipped_empty", 1)
                continue
            yield key, paragraphs


class _Spilling(beam.PTransform):
    def __init__(self, run_dirs: list[str], counts: list, namespace: str):
        super().__init__()
        self.run_dirs, self.counts, self.namespace = run_dirs, counts, namespace

    def _merge_sorted(self, run_dir: str, reduce):
        return spill.MergeSorted(
            run_dir,
            reduce,
            group_bytes=GROUP_BYTES,
            counts=self.counts,
            namespace=self.namespace,
        )


class DropDuplicateDocuments(_Spilling):
    """key, paragraphs -> key, paragraphs: exact-duplicate documents dropped (smallest key kept),
    of one PCollection or a tuple of them (each spilled apart, never flattened: MergeSorted).
    Spill runs go to `run_dirs` (one directory, removed by the stage at the end); counts join
    `counts` in `namespace`."""

    def expand(self, documents):
        parts = documents if isinstance(documents, tuple) else (documents,)
        pairs = tuple(
            part | f"ByContent{index or ''}" >> beam.Map(content_pair)
            for index, part in enumerate(parts)
        )
        return pairs | "KeepFirstDocument" >> self._merge_sorted(
            self.run_dirs[0], first_of_each_content
        )


class DropRepeatedParagraphs(_Spilling):
    """key, paragraphs -> key, paragraphs: paragraphs of at least `min_chars` characters removed
    where repeated (first occurrence by (key, index) kept). Spill runs go to `run_dirs` (two
    directories, removed by the stage at the end); counts join `counts` in `namespace`."""

    def __init__(self, min_chars: int, run_dirs: list[str], counts: list, namespace: str):
        super().__init__(run_dirs, counts, namespace)
        self.min_chars = min_chars

    def expand(self, unique):
        paragraph_runs, repeat_runs = self.run_dirs
        repeats = (
            unique
            | "ParagraphRefs" >> beam.FlatMap(paragraph_refs, self.min_chars)
            | "FindRepeats" >> self._merge_sorted(paragraph_runs, repeated_paragraphs)
        )
        return (
            repeats,
            unique | "DocumentPairs" >> beam.Map(document_pair),
        ) | "DropRepeats" >> self._merge_sorted(repeat_runs, drop_repeated_paragraphs)
