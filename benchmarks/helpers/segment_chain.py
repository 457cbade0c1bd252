"""Our side of benchmarks/quality.py: segment's cleaning step as a judge of one raw JSONL text
(segment.document_paragraphs("jsonl", ..., "NFKC", repair=True): its paragraphs, each repaired
and normalised -> quality.chain.clean_document with the settings of `--language target`), then,
as segment's Beam pipeline does once it has seen every document (`finish`), the reference model
learnt from the documents every check kept (their cleaned lines) judges the candidates
(chain.reconsider). The pipelines are imported when a judge is made, not with this module."""

from __future__ import annotations

from collections import Counter

from benchmarks.helpers.quality_side import Outcome


class Ours:
    """Segment's cleaning step on raw JSONL texts, settings of `--language target` (the reference
    model off where `reference_model` is False)."""

    def __init__(self, target: str, reference_model: bool = True):
        from pipelines.quality import langid, reference
        from pipelines.quality.settings import QualitySettings

        self.settings = QualitySettings.from_options(
            languages=[target],
            language_threshold=None,
            rules_off=[] if reference_model else ["reference_model"],
            thresholds={},
            pii="redact",
            repair=True,
        )
        self.identify, self.reference = langid.identify, reference
        self.counts = reference.ReferenceCounts.empty()
        self.counters: Counter = Counter()

    def inc(self, name: str, amount: int) -> None:
        self.counters[name] += amount

    def __call__(self, text: str) -> Outcome:
        from pipelines.quality import chain
        from pipelines.segment import stage as segment

        paragraphs, _ = segment.document_paragraphs("jsonl", text, "NFKC", repair=True)
        if not paragraphs:
            return Outcome(False, (), "empty")
        cleaned = chain.clean_document(
            paragraphs, self.settings, self.identify, self.inc, documents_format="jsonl"
        )
        if cleaned.overridable:
            return self._outcome(cleaned)._replace(pending=cleaned)
        if chain.confident(cleaned):
            self.counts.add(cleaned.paragraphs)
        return self._outcome(cleaned)

    @staticmethod
    def _outcome(cleaned) -> Outcome:
        why = cleaned.removal
        score = cleaned.reference[0] if cleaned.reference else None
        if not cleaned.removed:
            return Outcome(
                True,
                cleaned.paragraphs,
                why and why.rule,
                why and why.value,
                why and why.threshold,
                score,
                cleaned.kept_by_reference,
            )
        return Outcome(False, (), why.rule, why.value, why.threshold, score)

    def finish(self, outcomes: list[Outcome]) -> list[Outcome]:
        """The candidates judged by the reference model of the confident documents seen."""
        from pipelines.quality import chain

        model = self.reference.ReferenceModel.from_counts(self.counts)
        return [
            self._outcome(chain.reconsider(o.pending, model, self.settings)) if o.pending else o
            for o in outcomes
        ]


def ours(target: str) -> Ours:
    """Segment's cleaning step with the reference model (the default)."""
    return Ours(target)


def ours_rules_only(target: str) -> Ours:
    """Segment's cleaning step with the reference model off: the web-page rules alone."""
    return Ours(target, reference_model=False)
