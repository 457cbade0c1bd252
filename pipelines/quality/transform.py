"""Segment's cleaning step as Beam transforms: each document judged by
`pipelines.quality.chain.clean_document`; the reference model (pipelines.quality.reference) is
combined from the documents every check kept (their cleaned lines), or from `--reference-text`'s
files, and passed as a side input to judge the candidates (`chain.reconsider`); the kept go on,
the removed and those the model kept become audit records written in key order to
quality_removed.jsonl (through sorted runs: memory stays bounded), and the first EXAMPLES_PER_RULE
of each rule and outcome reach stats.json. In a dry run every document goes on as it came and
the audit says what a run would remove."""

from __future__ import annotations

import io
from collections.abc import Sequence

import apache_beam as beam
from apache_beam.io.filesystem import CompressionTypes
from apache_beam.transforms.window import GlobalWindows

from albert.errors import StageError
from albert.fs import join
from pipelines.common.runner import COUNTS, CountingDoFn
from pipelines.common.shards import WriteShards
from pipelines.quality import audit, chain, langid, reference
from pipelines.quality.config import AUDIT_FILE, EXAMPLES_PER_RULE, QualityConfig

AUDITED = "audited"
CANDIDATES = "candidates"
CONFIDENT = "confident"
AUDIT_PREFIX = "_quality_removed"
"""The audit's single shard before stats.json's writer names it AUDIT_FILE."""


class _Settle(CountingDoFn):
    """Shared by the judging DoFns: a judged document to the main output (key, paragraphs) and,
    where a check removes it (or would: dry run) or the reference model keeps it, to AUDITED as
    (key, its audit record)."""

    def __init__(self, settings, namespace: str, dry_run: bool):
        super().__init__(namespace)
        self.settings, self.dry_run = settings, dry_run

    def settle(self, key, source, paragraphs, cleaned):
        if cleaned.kept_by_reference:
            self.inc(f"quality_kept_reference_{cleaned.removal.rule}", 1)
            outcome = audit.KEPT_BY_REFERENCE
        elif cleaned.removal is not None:
            outcome = audit.KEPT_DRY_RUN if self.dry_run else audit.REMOVED
            if not self.dry_run:
                self.inc("skipped_quality", 1)
        else:
            yield key, paragraphs if self.dry_run else cleaned.paragraphs
            return
        redact = self.settings.pii != "keep"
        record = audit.removal_record(source, cleaned, paragraphs, redact, outcome)
        yield beam.pvalue.TaggedOutput(AUDITED, (key, record))
        if outcome != audit.REMOVED:
            yield key, paragraphs if self.dry_run else cleaned.paragraphs


class JudgeDocuments(_Settle):
    """(key, format, source, paragraphs) -> (key, cleaned paragraphs); audited documents also
    to AUDITED (`_Settle`); a candidate for the reference model to CANDIDATES as (key, source,
    paragraphs, Cleaned); where `confident_out`, the ReferenceCounts of the cleaned paragraphs of
    the documents no check removes (the default reference) to CONFIDENT, one per bundle (so the
    memory they take does not grow with the corpus)."""

    def __init__(self, settings, namespace: str, dry_run: bool, confident_out: bool):
        super().__init__(settings, namespace, dry_run)
        self.confident_out = confident_out

    def start_bundle(self):
        super().start_bundle()
        self._reference = None

    def process(self, element):
        key, fmt, source, paragraphs = element
        cleaned = chain.clean_document(
            paragraphs, self.settings, langid.identify, self.inc, documents_format=fmt
        )
        if cleaned.overridable:
            yield beam.pvalue.TaggedOutput(CANDIDATES, (key, source, paragraphs, cleaned))
            return
        if self.confident_out and chain.confident(cleaned):
            if self._reference is None:
                self._reference = reference.ReferenceCounts.empty()
            self._reference.add(cleaned.paragraphs)
        yield from self.settle(key, source, paragraphs, cleaned)

    def finish_bundle(self):
        yield from super().finish_bundle()
        if self._reference is not None:
            counts = GlobalWindows.windowed_value(self._reference)
            yield beam.pvalue.TaggedOutput(CONFIDENT, counts)


class Reconsider(_Settle):
    """A candidate (key, source, paragraphs, Cleaned) judged by the reference model (a side
    input): kept, counted per check overridden, or removed, counted per check; audited
    (`_Settle`)."""

    def process(self, element, model):
        key, source, paragraphs, cleaned = element
        cleaned = chain.reconsider(cleaned, model, self.settings)
        if cleaned.removed:
            self.inc(f"quality_removed_{cleaned.removal.rule}", 1)
        yield from self.settle(key, source, paragraphs, cleaned)


class TrainReference(beam.CombineFn):
    """ReferenceCounts -> the ReferenceModel of their sum (the same model for any order,
    bundling and number of workers)."""

    def create_accumulator(self):
        return reference.ReferenceCounts.empty()

    def add_input(self, counts, more):
        return counts.merge(more)

    def merge_accumulators(self, accumulators):
        accumulators = iter(accumulators)
        merged = next(accumulators)
        for counts in accumulators:
            merged.merge(counts)
        return merged

    def extract_output(self, counts):
        return reference.ReferenceModel.from_counts(counts)


def reference_counts(path: str) -> reference.ReferenceCounts:
    """The counts of a reference text file's lines, one paragraph each, read streaming;
    StageError naming the file where it is not UTF-8 or cannot be read."""
    from apache_beam.io.filesystems import FileSystems

    counts, number = reference.ReferenceCounts.empty(), 0
    try:
        with FileSystems.open(path, compression_type=CompressionTypes.AUTO) as raw:
            for number, line in enumerate(io.TextIOWrapper(raw, encoding="utf-8"), 1):
                if line.strip():
                    counts.add((line,))
    except UnicodeDecodeError:
        raise StageError(f"{path}: reference text line {number + 1} is not UTF-8") from None
    except OSError as error:
        raise StageError(f"{path}: reference text: {error}") from None
    return counts


def _by_rule(element):
    key, record = element
    return (record["outcome"], record["rule"]), (key, record)


def _examples(per_rule):
    """The examples of each rule, by rule then key."""
    _, smallest = per_rule
    return [record for _, record in smallest]


def apply(
    documents,
    config: QualityConfig,
    output_dir: str,
    counts: list,
    namespace: str,
    reference_paths: Sequence[str] = (),
):
    """(the documents left as (key, paragraphs), a tuple of PCollections that the next step
    spills apart: a Flatten of them would hold the judged ones in memory on the in-process runner
    until the reconsidered are ready; the keyword arguments segment's stats writer takes) of
    (key, format, source, paragraphs) `documents`, cleaned where `config.quality`; the
    reference model (where it is on) learns the files `reference_paths` (`config.reference_text`
    matched), or without any the confident documents."""
    if not config.quality:
        kept = documents | "KeysAndParagraphs" >> beam.Map(lambda element: (element[0], element[3]))
        return kept, {"quality_settings": None, "quality_examples": [], "quality_audit": []}
    settings, dry_run = config.quality_settings(), config.quality_dry_run
    modelled = settings.enabled(chain.REFERENCE)
    judged = documents | "Judge" >> beam.ParDo(
        JudgeDocuments(settings, namespace, dry_run, modelled and not reference_paths)
    ).with_outputs(AUDITED, CANDIDATES, CONFIDENT, COUNTS, main="kept")
    counts.append(judged[COUNTS])
    kept, audited = [judged.kept], [judged[AUDITED]]
    if modelled:
        if reference_paths:
            texts = (
                documents.pipeline
                | "ReferenceFiles" >> beam.Create(list(reference_paths))
                | "ReferenceCounts" >> beam.Map(reference_counts)
            )
        else:
            texts = judged[CONFIDENT]
        model = texts | "TrainReference" >> beam.CombineGlobally(TrainReference())
        reconsidered = judged[CANDIDATES] | "Reconsider" >> beam.ParDo(
            Reconsider(settings, namespace, dry_run), model=beam.pvalue.AsSingleton(model)
        ).with_outputs(AUDITED, COUNTS, main="kept")
        counts.append(reconsidered[COUNTS])
        kept.append(reconsidered.kept)
        audited.append(reconsidered[AUDITED])
    audited = tuple(audited) | "Audited" >> beam.Flatten()
    written = (
        audited
        | "AuditLines" >> beam.MapTuple(lambda key, record: (key, audit.record_line(record)))
        | "WriteAudit" >> WriteShards(join(output_dir, AUDIT_PREFIX), 1, ".jsonl")
    )
    examples = (
        audited
        | "ByRule" >> beam.Map(_by_rule)
        | "FirstPerRule" >> beam.combiners.Top.SmallestPerKey(EXAMPLES_PER_RULE, key=lambda p: p[0])
        | "Examples" >> beam.FlatMap(_examples)
    )
    return tuple(kept), {
        "quality_settings": audit.settings_summary(config),
        "quality_examples": beam.pvalue.AsList(examples),
        "quality_audit": beam.pvalue.AsList(written),
    }


def name_audit(output_dir: str, written: list[str]) -> None:
    """Rename the audit's single shard to AUDIT_FILE (stats.json's writer, once it is complete)."""
    from apache_beam.io.filesystems import FileSystems

    if written:
        FileSystems.rename(written, [join(output_dir, AUDIT_FILE)])
