"""The report's data-quality parts: what segment's cleaning step removed and why (per rule, with
examples), the language mix and the personal data replaced; near-duplicate documents segment
removed (a figure and a few examples from its audit); and evaluation examples found in the corpus
(decontamination)."""

from __future__ import annotations

import itertools
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from flows.report.text import millions, number, percent, table
from pipelines.dedup.near_config import AUDIT_FILE
from pipelines.quality.config import AUDIT_FILE as QUALITY_AUDIT_FILE

LANGUAGES_SHOWN = 8
"""The most frequent languages the report names; the rest are summed as 'other'."""


def decontamination_section(report: Mapping[str, Any]) -> str:
    """Per evaluation set and split: its examples, those long enough to be matched, and those
    sharing an n-gram with the corpus; what --remove took out, where it ran."""
    n = report.get("ngram")
    rows = [
        (
            f"{entry['name']} {entry['split']}",
            number(entry["examples"]),
            number(entry.get("examples_with_ngram")),
            f"{number(found)} ({percent(found / entry['examples'])})",
        )
        for entry in report.get("sets") or []
        for found in [entry["contaminated"]]
    ]
    header = ("set and split", "examples", f"with a {n}-word n-gram", "sharing one with the corpus")
    parts = [table(rows, header)]
    removed = (report.get("corpus") or {}).get("removed")
    if removed:
        parts.append(
            f"Removed from the corpus the later stages read: {number(removed['sentences_removed'])}"
            f" sentences ({number(removed['characters_removed'])} characters), "
            f"{number(removed['documents_removed'])} documents left empty."
        )
    return "\n\n".join(parts)


def contamination_line(report: Mapping[str, Any]) -> str:
    """The headline's line: contaminated / examples per evaluation set and split."""
    sets = ", ".join(
        f"{entry['name']} {entry['split']} {number(entry['contaminated'])} of "
        f"{number(entry['examples'])}"
        for entry in report.get("sets") or []
    )
    removed = " (removed from training)" if (report.get("corpus") or {}).get("removed") else ""
    return f"**Evaluation examples in the corpus ({report.get('ngram')}-gram):** {sets}{removed}"


def near_duplicate_figure(near: Mapping[str, Any] | None) -> str:
    """'12 in 9 clusters (1.2 M characters; 3 of an earlier corpus)', or 'off'."""
    if not near or near.get("settings") is None:
        return "off"
    text = (
        f"{number(near.get('documents'))} in {number(near.get('clusters'))} clusters "
        f"({millions(near.get('characters'))} characters"
    )
    if near.get("of_reference"):
        text += f"; {number(near['of_reference'])} of an earlier corpus"
    return text + ")"


def near_duplicate_examples(segment_dir: Path, count: int = 3) -> str:
    """The first `count` pairs of segment's near-duplicate audit: removed text, the text it
    duplicates and their estimated similarity ('' where there is no audit or it is empty)."""
    audit = segment_dir / AUDIT_FILE
    if not audit.exists():
        return ""
    rows = []
    with audit.open(encoding="utf-8") as handle:
        for line in itertools.islice(handle, count):
            record = json.loads(line)
            rows.append(
                (
                    record["removed_text"][:80] + "…",
                    record["duplicate_of_text"][:80] + "…"
                    if record["duplicate_of_text"]
                    else "(a document of an earlier corpus)",
                    f"{record['similarity']:.2f}",
                )
            )
    if not rows:
        return ""
    header = ("removed document", "near-duplicate of (kept)", "estimated similarity")
    return f"Examples from `{AUDIT_FILE}`:\n\n" + table(rows, header)


def quality_section(stats: Mapping[str, Any]) -> str:
    """Segment's cleaning in a few lines: documents removed of those it judged (or, in a dry run,
    that it would remove), a table of the rules that removed them with their first examples (up
    to three, 200 characters each), one of the documents the reference model kept though a rule
    would remove them, lines removed per rule, the language mix and the personal data replaced
    (one line where cleaning was off)."""
    quality = stats.get("quality") or {}
    settings = quality.get("settings")
    if settings is None:
        return "Cleaning (language, quality rules, personal data): off."
    judged = sum((quality.get("languages") or {}).values())  # each judged document has one
    removed = quality.get("documents_removed", 0)
    verb = "would remove (a dry run: none was removed)" if settings.get("dry_run") else "removed"
    headline = (
        f"**Cleaning** {verb} {number(removed)} of the {number(judged)} documents it judged "
        f"({percent(removed / judged if judged else 0)}); every removal is listed in "
        f"`segment/{QUALITY_AUDIT_FILE}` with its rule and measured value."
    )
    parts = [headline]
    for counts, examples, header in (
        (quality.get("removed"), quality.get("examples"), "documents removed"),
        (
            quality.get("kept_by_reference_model"),
            quality.get("kept_examples"),
            "documents kept by the reference model",
        ),
    ):
        rows = [
            (f"`{rule}`", number(count), _example_text((examples or {}).get(rule) or []))
            for rule, count in sorted((counts or {}).items(), key=lambda i: -i[1])
        ]
        if rows:
            parts.append(table(rows, ("rule", header, "first examples (value ≷ bound)")))
    facts = [
        ("lines removed", _counts_text(quality.get("lines_removed"))),
        ("languages", _languages_text(quality.get("languages") or {})),
        ("personal data replaced", _counts_text(quality.get("pii"))),
        ("documents repaired (mojibake, control characters)", number(quality.get("repaired"))),
    ]
    parts.append(table(facts, ("figure", "value")))
    return "\n\n".join(parts)


def _example_text(records: list[Mapping[str, Any]]) -> str:
    """The examples of one rule in a table cell: each document, its text (as stats.json cut it),
    the rule's value and bound and, where the reference model judged it, its score and bound."""
    texts = []
    for record in records:
        text = " ".join(record["text"].split())
        model = (
            f"; model {record['reference_score']:g} vs {record['reference_threshold']:g}"
            if "reference_score" in record
            else ""
        )
        texts.append(
            f"{record['document']}: “{text}…” ({record['value']:g} vs {record['threshold']:g}"
            f"{model})"
        )
    return "<br>".join(texts)


def _counts_text(counts: Mapping[str, int] | None) -> str:
    items = sorted((counts or {}).items(), key=lambda item: (-item[1], item[0]))
    return ", ".join(f"{name} {number(value)}" for name, value in items) or "none"


def _languages_text(languages: Mapping[str, int]) -> str:
    total = sum(languages.values())
    if not total:
        return "none identified"
    items = sorted(languages.items(), key=lambda item: (-item[1], item[0]))
    shown = [f"{code} {percent(count / total)}" for code, count in items[:LANGUAGES_SHOWN]]
    rest = sum(count for _, count in items[LANGUAGES_SHOWN:])
    if rest:
        shown.append(f"other {percent(rest / total)}")
    return ", ".join(shown)
