"""What the segment stage is asked (`SegmentConfig`) and the files its input names
(`match_inputs`), without Beam: the flows build and check it, and match a line's new files, before
anything loads Beam (a command that fails there does so in seconds)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal

from pydantic import Field

from albert.config import Encoding
from albert.errors import StageError
from albert.fs import expand_files, filesystem
from pipelines.common import text_cleaning
from pipelines.dedup.near_config import NearDupConfig
from pipelines.quality.config import QualityConfig
from pipelines.segment import input_formats


class SegmentConfig(QualityConfig, NearDupConfig):
    """Inputs, format, error policy, cleaning and de-duplication settings and bounds of the
    segmentation stage."""

    input: list[str] = Field(
        min_length=1,
        description="input file, directory or glob pattern, local or gs:// (repeat the flag)",
    )
    output: str = Field(description="output directory for the *.txt shards and stats.json")
    format: input_formats.Format = Field(
        "auto", description="input format; auto picks per file by extension and content"
    )
    on_error: Literal["fail", "skip"] = Field(
        "fail",
        description=(
            "bad input file: fail the job naming it, or skip it and report it in stats.json"
        ),
    )
    num_shards: int = Field(8, gt=0, description="number of output .txt shards")
    unicode_form: text_cleaning.UnicodeForm = Field(
        "NFKC", description="Unicode normalisation form"
    )
    min_document_chars: int = Field(
        200,
        ge=0,
        description=(
            "documents with fewer characters of sentences are dropped (a Han character counts 4, "
            "a Hangul syllable 2.7, a kana 1.3)"
        ),
    )
    max_sentence_chars: int = Field(
        2000, ge=20, description="longer sentences are cut at a space before this bound"
    )
    min_dedup_paragraph_chars: int = Field(
        40, ge=1, description="paragraphs at least this long are removed when repeated (first kept)"
    )
    fallback_encoding: Encoding | None = Field(
        None, description="decode non-UTF-8 lines of text files with this encoding (e.g. latin-1)"
    )
    jsonl_field: str = Field("text", description="the JSONL field holding a document's text")


def match_inputs(patterns: Iterable[str]) -> list[str]:
    """Every file the patterns name (a directory: the files in it), sorted.

    A pattern matching no file is an error in any mode; sub-directories are not descended into.
    """
    paths: set[str] = set()
    for pattern in patterns:
        matched = [path for path in expand_files(pattern, ("*",)) if not _is_directory(path)]
        if not matched:
            raise StageError(f"{pattern}: no file matches this input pattern")
        paths.update(matched)
    return sorted(paths)


def _is_directory(url: str) -> bool:
    fs, path = filesystem(url)
    return fs.isdir(path)
