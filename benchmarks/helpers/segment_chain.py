"""Our side of benchmarks/quality.py: segment's cleaning step as a judge of one raw JSONL text
(segment.document_paragraphs("jsonl", ..., "NFKC", repair=True): its paragraphs, each repaired
and normalised -> quality.chain.clean_document with the settings of `--language target`). The
pipelines are imported when a judge is made, not with this module."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable

from benchmarks.helpers.quality_side import Outcome


def ours(target: str) -> Callable[[str], Outcome]:
    """Segment's cleaning step on one raw JSONL text, settings of `--language target`."""
    from pipelines.quality import langid
    from pipelines.quality.chain import clean_document
    from pipelines.quality.settings import QualitySettings
    from pipelines.segment import stage as segment

    settings = QualitySettings.from_options(
        languages=[target],
        language_threshold=None,
        rules_off=[],
        thresholds={},
        pii="redact",
        repair=True,
    )
    counts: Counter = Counter()

    def inc(name: str, amount: int) -> None:
        counts[name] += amount

    def judge(text: str) -> Outcome:
        paragraphs, _ = segment.document_paragraphs("jsonl", text, "NFKC", repair=True)
        if not paragraphs:
            return Outcome(False, (), "empty")
        cleaned = clean_document(
            paragraphs, settings, langid.identify, inc, documents_format="jsonl"
        )
        if cleaned.removal is None:
            return Outcome(True, cleaned.paragraphs)
        why = cleaned.removal
        return Outcome(False, (), why.rule, why.value, why.threshold)

    return judge
