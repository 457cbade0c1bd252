"""stats.json of the segment stage: figures from the pipeline's counts, a count per skip reason, the
bad files, a sentence-length histogram and its warning, near-duplicate removal's figures; and the
refusal of an empty corpus.
"""

from __future__ import annotations

import bisect
import json
import posixpath
from collections.abc import Iterable

from apache_beam.io.filesystems import FileSystems

from albert.errors import NothingNew, StageError
from albert.fs import join
from pipelines.common import spill
from pipelines.dedup import near_config as near_dup_config
from pipelines.quality import audit as quality_audit
from pipelines.quality import transform as quality_transform

STATS_FILE = "stats.json"
SKIP_REASONS = (
    "bad_file",
    "bad_record",
    "namespace",
    "redirect",
    "disambiguation",
    "empty",
    "quality",
    "duplicate_document",
    "near_duplicate",
    "too_short",
    "no_words",
)


SENTENCE_LENGTH_BUCKETS = (0, 25, 50, 100, 150, 200, 300, 500, 1000, 2000)
LONG_MEDIAN_CHARS = 300
"""A median sentence at least this long means sentences were not split (typical prose: 60-200)."""


def sentence_length_counts(sentences: Iterable[str]) -> dict[str, int]:
    """Counts per length bucket, named `sentence_chars_<bucket's lower bound>`."""
    counts: dict[str, int] = {}
    for sentence in sentences:
        low = SENTENCE_LENGTH_BUCKETS[
            bisect.bisect_right(SENTENCE_LENGTH_BUCKETS, len(sentence)) - 1
        ]
        counts[f"sentence_chars_{low}"] = counts.get(f"sentence_chars_{low}", 0) + 1
    return counts


def sentence_length_histogram(counters: dict[str, int]) -> dict[str, int]:
    """Output sentences per length bucket, keyed by the bucket's lower bound in characters (a bucket
    runs to the next bound; the last has none)."""
    return {str(low): counters.get(f"sentence_chars_{low}", 0) for low in SENTENCE_LENGTH_BUCKETS}


def sentence_length_warnings(histogram: dict[str, int]) -> list[str]:
    """A warning when the median output sentence is implausibly long (sentence splitting failed)."""
    total = sum(histogram.values())
    seen = 0
    for index, low in enumerate(SENTENCE_LENGTH_BUCKETS):
        seen += histogram.get(str(low), 0)
        if total and 2 * seen >= total:
            if low < LONG_MEDIAN_CHARS:
                return []
            high = (
                SENTENCE_LENGTH_BUCKETS[index + 1] - 1
                if index + 1 < len(SENTENCE_LENGTH_BUCKETS)
                else "more"
            )
            return [
                (
                    f"the median sentence is {low}-{high} characters long (typical prose: "
                    "60-200): sentences were probably not split; check the input format and the "
                    "text"
                )
            ]
    return []


def near_duplicate_figures(counters: dict[str, int], settings: dict | None) -> dict:
    """stats.json's `near_duplicates`: documents and characters removed, clusters, how many were
    copies of a reference corpus, documents too short to check, and the settings (None: off)."""
    return {
        "documents": counters.get("skipped_near_duplicate", 0),
        "characters": counters.get("near_duplicate_characters", 0),
        "clusters": counters.get("near_duplicate_clusters", 0),
        "of_reference": counters.get("near_duplicate_of_reference", 0),
        "unchecked_short": counters.get("near_dup_unchecked", 0),
        "settings": settings,
    }


def summarize(
    counters: dict[str, int],
    bad_files: list[dict],
    paths: list[str],
    shards: list[str],
    near_dup_settings: dict | None = None,
    quality_settings: dict | None = None,
    quality_examples: Iterable[dict] = (),
) -> dict:
    """stats.json: figures from the counts, a count per skip reason, the bad files, sentence
    lengths, the cleaning step's and near-duplicate removal's figures."""
    figures = (
        "documents_in",
        "documents_out",
        "sentences_in",
        "sentences_out",
        "characters_in",
        "characters_out",
        "bytes_in",
        "paragraphs_duplicate",
        "sentences_cut",
        "lines_fallback_encoding",
        "lines_cut",
        "documents_cut",
        "files_read",
    )
    stats: dict = {"input_files": len(paths)}
    stats.update({name: counters.get(name, 0) for name in figures})
    stats["formats"] = {
        name.removeprefix("files_"): value
        for name, value in counters.items()
        if name in ("files_wikipedia", "files_books", "files_chapters", "files_text", "files_jsonl")
    }
    stats["quality"] = quality_audit.quality_figures(counters, quality_settings, quality_examples)
    stats["skipped"] = {reason: counters.get(f"skipped_{reason}", 0) for reason in SKIP_REASONS}
    stats["bad_files"] = sorted(bad_files, key=lambda item: item["file"])
    stats["shards"] = sorted(posixpath.basename(path) for path in shards)
    stats["sentence_length_histogram"] = sentence_length_histogram(counters)
    stats["warnings"] = sentence_length_warnings(stats["sentence_length_histogram"])
    stats["near_duplicates"] = near_duplicate_figures(counters, near_dup_settings)
    return stats


def write_stats(
    counts: dict,
    bad_files: list[dict],
    shards: list[str],
    paths: list[str],
    output_dir: str,
    run_dirs: list[str],
    near_duplicates: list[dict],
    near_dup_settings: dict | None,
    quality_settings: dict | None,
    quality_examples: list[dict],
    quality_audit: list[str],
    near_dup_signatures: list[str] | None = None,
) -> None:
    """Write stats.json from the pipeline's data, once everything else is written (the signature
    files `near_dup_signatures` and the cleaning step's audit `quality_audit` included), removing
    the spill's `run_dirs`; before it, where near-duplicate removal ran, its audit file and
    signature header, and where cleaning ran, the cleaning audit's final name."""
    spill.remove_run_dirs(run_dirs)
    if near_dup_settings is not None:
        near_dup_config.write_outputs(output_dir, near_duplicates, near_dup_settings)
    quality_transform.name_audit(output_dir, quality_audit)
    stats = summarize(
        counts, bad_files, paths, shards, near_dup_settings, quality_settings, quality_examples
    )
    with FileSystems.create(join(output_dir, STATS_FILE)) as handle:
        handle.write((json.dumps(stats, indent=2, sort_keys=True) + "\n").encode("utf-8"))


def check_not_empty(stats: dict) -> None:
    """Refuse a corpus with nothing in it: every input file skipped, or no document left
    (`NothingNew` where near-copies of the reference were among them)."""
    if stats["files_read"] == 0 and stats["bad_files"]:
        first = stats["bad_files"][0]
        raise StageError(
            f"every input file was skipped as bad ({len(stats['bad_files'])} of "
            f"{stats['input_files']}), e.g. {first['file']}: {first['reason']}"
        )
    if stats["documents_out"] == 0:
        skipped = ", ".join(
            f"{reason} {count}" for reason, count in stats["skipped"].items() if count
        )
        of_reference = (stats.get("near_duplicates") or {}).get("of_reference", 0)
        raise (NothingNew if of_reference else StageError)(
            f"no document left: {stats['documents_in']} read from {stats['files_read']} file(s), "
            f"all skipped ({skipped or 'nothing readable'})"
            + (f"; near-copies of the reference corpus: {of_reference}" if of_reference else "")
        )
