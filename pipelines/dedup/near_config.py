"""The settings of near-duplicate removal (fields of SegmentConfig), its reference corpora and the
files it writes beside segment's shards: near_duplicates.jsonl and the signature files. The flows
import it for their reports, so Beam loads only where the files are written: a flow command that
fails before its stages (a bad flag or environment) never loads Beam (1.6 CPU-s)."""

from __future__ import annotations

import json

from pydantic import Field, model_validator

from albert.config import StageConfig
from albert.errors import StageError
from albert.fs import join
from pipelines.dedup import minhash

SEED = 44
"""The permutations' seed: fixed, so that the signatures of every run compare (in their header)."""
AUDIT_FILE = "near_duplicates.jsonl"


class NearDupConfig(StageConfig):
    """The settings of near-duplicate removal (fields of SegmentConfig)."""

    near_dedup: bool = Field(
        True, description="remove near-duplicate documents (MinHash LSH over word n-grams)"
    )
    near_dup_ngram: int = Field(5, ge=1, description="words per shingle")
    near_dup_permutations: int = Field(
        70, ge=1, le=1024, description="MinHash permutations (signature length)"
    )
    near_dup_bands: int = Field(14, ge=1, description="LSH bands (candidates share one band)")
    near_dup_rows: int = Field(5, ge=1, description="signature positions per LSH band")
    near_dup_threshold: float = Field(
        0.8,
        gt=0,
        le=1,
        description="exact Jaccard similarity of the shingle sets at which a candidate is removed",
    )
    near_dup_reference: list[str] = Field(
        [],
        description=(
            "an earlier segment output (or a directory of its near_dup_signatures* files): "
            "documents near-duplicating one of its documents are removed too (repeat the flag)"
        ),
    )

    @model_validator(mode="after")
    def _bands_fit(self):
        if self.near_dup_reference and not self.near_dedup:
            raise ValueError("near_dup_reference needs near_dedup (it is switched off)")
        if self.near_dup_bands * self.near_dup_rows > self.near_dup_permutations:
            raise ValueError(
                f"near_dup_bands x near_dup_rows ({self.near_dup_bands} x "
                f"{self.near_dup_rows}) exceeds near_dup_permutations "
                f"({self.near_dup_permutations})"
            )
        return self

    def minhash_settings(self) -> minhash.MinHashSettings:
        return minhash.MinHashSettings(self.near_dup_ngram, self.near_dup_permutations, SEED)


def reference_files(config: NearDupConfig) -> list[str]:
    """The signature files of every reference directory, their headers checked against `config`
    and each a regular file (a link to a device such as /dev/zero would never end)."""
    files = []
    for directory in config.near_dup_reference:
        minhash.check_header(directory, config.minhash_settings())
        found = minhash.signature_files(directory)
        if not found:
            raise StageError(f"{directory}: no {minhash.SIGNATURE_SUFFIX} signature file in it")
        for path in found:
            minhash.regular_file_size(path)
        files.extend(found)
    return files


def settings_summary(config: NearDupConfig) -> dict:
    return {
        "ngram": config.near_dup_ngram,
        "permutations": config.near_dup_permutations,
        "bands": config.near_dup_bands,
        "rows": config.near_dup_rows,
        "threshold": config.near_dup_threshold,
        "seed": SEED,
        "references": list(config.near_dup_reference),
    }


def write_outputs(output_dir: str, records: list[dict], settings: dict) -> None:
    """near_duplicates.jsonl (one audit record a line, by removed key) and the signature header."""
    from apache_beam.io.filesystems import FileSystems  # Beam: the pipeline's, not the config's

    with FileSystems.create(join(output_dir, AUDIT_FILE)) as handle:
        for record in sorted(records, key=lambda item: item["removed"]):
            handle.write((json.dumps(record, sort_keys=True) + "\n").encode("utf-8"))
    header = minhash.MinHashSettings(settings["ngram"], settings["permutations"], settings["seed"])
    with FileSystems.create(join(output_dir, minhash.HEADER_FILE)) as handle:
        handle.write(minhash.header(header).encode("utf-8"))
