"""A model line's near-duplicate signatures (docs/flows.md, "Near-copies of earlier nights").

Each version keeps the MinHash signatures of the documents it added: segment's
near_dup_signatures* files, copied into VERSION/near_dup/. A night's segment is given those of
every version in current's lineage as references, so a document that near-duplicates one the line
has already taken (another edition of last week's file, a re-scan) is removed as not new.
"""

from __future__ import annotations

from albert.config import StageConfig
from albert.fs import exists, join
from flows.line.files import copy_tree
from flows.line.records import Records, ancestry
from pipelines.dedup.minhash import HEADER_FILE, signature_files

NEAR_DUP_DIR = "near_dup"
"""A version's directory of the signatures of the documents it added."""


def keep_signatures(segment_dir: str, version_dir: str) -> None:
    """Copy the signature header and files of a segment output into VERSION/near_dup/ (nothing
    where the segment ran with near-duplicate removal off, or `segment_dir` is not one)."""
    header = join(segment_dir, HEADER_FILE)
    if not exists(header):
        return
    target = join(version_dir, NEAR_DUP_DIR)
    copy_tree(header, join(target, HEADER_FILE))
    for path in signature_files(segment_dir):
        copy_tree(path, join(target, path.rsplit("/", 1)[-1]))


def lineage_references(line_path, records: Records, current: str) -> list[str]:
    """The near_dup/ directories of `current` and its ancestors that hold signatures, base last.
    `line_path(*parts)` is the line's ModelLine.path."""
    return [
        line_path(version, NEAR_DUP_DIR)
        for version in ancestry(records, current)
        if exists(line_path(version, NEAR_DUP_DIR, HEADER_FILE))
    ]


def with_lineage(segment: StageConfig, references: list[str]) -> StageConfig:
    """`segment` also checking its documents against `references` (unchanged where near-duplicate
    removal is off or there are none)."""
    if not references or not segment.near_dedup:
        return segment
    return segment.model_copy(
        update={"near_dup_reference": [*segment.near_dup_reference, *references]}
    )
