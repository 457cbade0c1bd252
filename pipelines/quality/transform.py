"""Segment's cleaning step as Beam transforms: each document judged by
`pipelines.quality.chain.clean_document`; the kept go on, the removed become audit records written
in key order to quality_removed.jsonl (through sorted runs: memory stays bounded), and the first
EXAMPLES_PER_RULE of each rule reach stats.json."""

from __future__ import annotations

import apache_beam as beam

from albert.fs import join
from pipelines.common.runner import COUNTS, CountingDoFn
from pipelines.common.shards import WriteShards
from pipelines.quality import audit, chain, langid
from pipelines.quality.config import AUDIT_FILE, EXAMPLES_PER_RULE, QualityConfig

REMOVED = "removed"
AUDIT_PREFIX = "_quality_removed"
"""The audit's single shard before stats.json's writer names it AUDIT_FILE."""


class JudgeDocuments(CountingDoFn):
    """(key, format, source, paragraphs) -> (key, cleaned paragraphs); a removed document goes to
    REMOVED as (key, its audit record)."""

    def __init__(self, settings, namespace: str):
        super().__init__(namespace)
        self.settings = settings

    def process(self, element):
        key, fmt, source, paragraphs = element
        cleaned = chain.clean_document(
            paragraphs, self.settings, langid.identify, self.inc, documents_format=fmt
        )
        if cleaned.removal is None:
            yield key, cleaned.paragraphs
            return
        self.inc("skipped_quality", 1)
        record = audit.removal_record(
            source, cleaned, paragraphs, redact=self.settings.pii != "keep"
        )
        yield beam.pvalue.TaggedOutput(REMOVED, (key, record))


def _by_rule(element):
    key, record = element
    return record["rule"], (key, record)


def _examples(per_rule):
    """The examples of each rule, by rule then key."""
    _, smallest = per_rule
    return [record for _, record in smallest]


def apply(documents, config: QualityConfig, output_dir: str, counts: list, namespace: str):
    """(the documents left as (key, paragraphs), the keyword arguments segment's stats writer
    takes) of (key, format, source, paragraphs) `documents`, cleaned where `config.quality`."""
    if not config.quality:
        kept = documents | "KeysAndParagraphs" >> beam.Map(lambda element: (element[0], element[3]))
        return kept, {"quality_settings": None, "quality_examples": [], "quality_audit": []}
    judged = documents | "Judge" >> beam.ParDo(
        JudgeDocuments(config.quality_settings(), namespace)
    ).with_outputs(REMOVED, COUNTS, main="kept")
    counts.append(judged[COUNTS])
    removed = judged[REMOVED]
    written = (
        removed
        | "AuditLines" >> beam.MapTuple(lambda key, record: (key, audit.record_line(record)))
        | "WriteAudit" >> WriteShards(join(output_dir, AUDIT_PREFIX), 1, ".jsonl")
    )
    examples = (
        removed
        | "ByRule" >> beam.Map(_by_rule)
        | "FirstPerRule" >> beam.combiners.Top.SmallestPerKey(EXAMPLES_PER_RULE, key=lambda p: p[0])
        | "Examples" >> beam.FlatMap(_examples)
    )
    return judged.kept, {
        "quality_settings": audit.settings_summary(config),
        "quality_examples": beam.pvalue.AsList(examples),
        "quality_audit": beam.pvalue.AsList(written),
    }


def name_audit(output_dir: str, written: list[str]) -> None:
    """Rename the audit's single shard to AUDIT_FILE (stats.json's writer, once it is complete)."""
    from apache_beam.io.filesystems import FileSystems

    if written:
        FileSystems.rename(written, [join(output_dir, AUDIT_FILE)])
