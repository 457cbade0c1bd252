"""The cleaning step's audit, without Beam: a removed document's record in quality_removed.jsonl
and stats.json's `quality` figures from the pipeline's counts (removals and lines removed per rule,
documents per language, personal data per kind, texts repaired, the first examples per rule)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping

from pipelines.quality import pii
from pipelines.quality.config import EXAMPLE_CHARS, EXCERPT_CHARS, QualityConfig

REMOVED = "removed"
KEPT_BY_REFERENCE = "kept_by_reference_model"
KEPT_DRY_RUN = "kept_dry_run"
OUTCOMES = (REMOVED, KEPT_BY_REFERENCE, KEPT_DRY_RUN)
"""An audit record's `outcome`: removed; kept by the reference model though a check would remove
it; or one a check would remove, kept because the run is a dry run."""

COUNTER_PREFIXES = {
    "removed": "quality_removed_",
    "kept_by_reference_model": "quality_kept_reference_",
    "lines_removed": "quality_lines_",
    "languages": "language_",
    "pii": "pii_",
}
"""stats.json's `quality` tables and the counters they are read from (chain.clean_document's)."""


def removal_record(
    source: str, cleaned, paragraphs: Iterable[str], redact: bool, outcome: str = REMOVED
) -> dict:
    """The audit record of a document `cleaned` that a check removes (or would: `outcome`): its
    source (`file#id`), outcome, rule, measured value and bound, language and score, the reference
    model's score and bound where it judged the document, and the first EXCERPT_CHARS characters
    of its text, with its personal data replaced where `redact` (the audit keeps none the corpus
    would not)."""
    removal = cleaned.removal
    text = "\n".join(paragraphs)[: 2 * EXCERPT_CHARS]  # redacted whole, then cut
    if redact:
        text = pii.redact(text)[0]
    record = {
        "document": source,
        "outcome": outcome,
        "rule": removal.rule,
        "value": round(float(removal.value), 6),
        "threshold": round(float(removal.threshold), 6),
        "language": cleaned.language,
        "language_score": round(float(cleaned.language_score), 4),
        "text": text[:EXCERPT_CHARS],
    }
    if cleaned.reference is not None:
        score, bound = cleaned.reference
        record["reference_score"] = round(float(score), 6)
        record["reference_threshold"] = round(float(bound), 6)
    return record


def record_line(record: Mapping) -> bytes:
    """One audit line: the record as sorted-key JSON and a newline."""
    return (json.dumps(record, sort_keys=True, ensure_ascii=False) + "\n").encode("utf-8")


def settings_summary(config: QualityConfig) -> dict | None:
    """The cleaning settings stats.json records (None: the step is off)."""
    if not config.quality:
        return None
    return {
        "language": list(config.language),
        "language_threshold": config.language_threshold,
        "rules_off": sorted(config.quality_rules_off),
        "thresholds": sorted(config.quality_thresholds),
        "pii": config.pii,
        "repair_text": config.repair_text,
        "reference_text": list(config.reference_text),
        "dry_run": config.quality_dry_run,
    }


def quality_figures(
    counters: Mapping[str, int], settings: dict | None, examples: Iterable[dict]
) -> dict:
    """stats.json's `quality`: documents removed (all and per rule), documents the reference
    model kept per rule it overrode, lines removed per rule, documents per language, personal data
    replaced per kind, documents repaired, the first examples of each rule (`examples`: removed,
    or kept in a dry run; `kept_examples`: kept by the reference model; their audit records, by
    rule then key, the text cut to EXAMPLE_CHARS) and the settings (None: off)."""
    figures: dict = {
        name: {
            counter.removeprefix(prefix): value
            for counter, value in sorted(counters.items())
            if counter.startswith(prefix) and value
        }
        for name, prefix in COUNTER_PREFIXES.items()
    }
    figures["documents_removed"] = sum(figures["removed"].values())
    figures["repaired"] = counters.get("quality_repaired", 0)
    figures["examples"], figures["kept_examples"] = {}, {}
    for record in sorted(examples, key=lambda item: (item["rule"], item["document"])):
        group = "kept_examples" if record.get("outcome") == KEPT_BY_REFERENCE else "examples"
        example = {**record, "text": record["text"][:EXAMPLE_CHARS]}
        figures[group].setdefault(record["rule"], []).append(example)
    figures["settings"] = settings
    return figures


def night_figures(stats: Mapping) -> dict | None:
    """A model line night's record of what cleaning did to its files (from segment's stats.json):
    documents removed, in all and per rule, lines removed per rule, documents per language,
    personal data replaced per kind and documents repaired (None: cleaning was off)."""
    quality = stats.get("quality") or {}
    if quality.get("settings") is None:
        return None
    names = (
        "documents_removed",
        "removed",
        "kept_by_reference_model",
        "lines_removed",
        "languages",
        "pii",
        "repaired",
    )
    return {name: quality.get(name) for name in names}
