"""Grouping through sorted spill files (pipelines.common.spill) and segment's de-duplication
reduces."""

from __future__ import annotations

import apache_beam as beam
import pytest
from apache_beam.testing.util import assert_that, equal_to

from pipelines.common import spill
from pipelines.common.runner import pipeline_options, sum_counts
from pipelines.dedup import exact as dedup
from pipelines.segment import stats as segment_stats

pytestmark = pytest.mark.backend_free


def no_count(name, amount=1):
    pass


def test_merge_sorted_groups_by_key_prefix_whatever_the_run_size(tmp_path):
    """Tiny runs (a spill per pair) give the same groups as one run: order is (key, payload)."""
    pairs = [(bytes([i % 3]) + bytes([i]), b"%d" % i) for i in range(50)]

    def group_sizes(sorted_pairs, inc):
        previous, size = None, 0
        for key, _ in sorted_pairs:
            inc("pairs", 1)
            if key[:1] != previous and previous is not None:
                yield previous, size
                size = 0
            previous, size = key[:1], size + 1
        if previous is not None:
            yield previous, size

    for run_bytes in (1, 1 << 20):
        counts: list = []
        with beam.Pipeline(options=pipeline_options([])) as pipeline:
            grouped = (
                pipeline
                | beam.Create(pairs)
                | spill.MergeSorted(
                    str(tmp_path / f"runs{run_bytes}"),
                    group_sizes,
                    group_bytes=1,
                    counts=counts,
                    namespace="test",
                    partitions=2,
                    run_bytes=run_bytes,
                )
            )
            assert_that(grouped, equal_to([(b"\x00", 17), (b"\x01", 17), (b"\x02", 16)]))
            totals = sum_counts(counts)  # a side input
            summed = pipeline | "One" >> beam.Create([None]) | beam.Map(lambda _, t: t, totals)
            assert_that(summed, equal_to([{"pairs": 50}]), label="counts")
        run_dir = tmp_path / f"runs{run_bytes}"
        assert list(
            run_dir.iterdir()
        )  # kept until the stage is written: a retried bundle reads them again
        spill.remove_run_dirs([str(run_dir)])
        assert not run_dir.exists()


def test_document_and_paragraph_deduplication_keep_the_first_by_key():
    docs = {
        b"k" * 8: ("Same paragraph that is long.", "Other."),
        b"a" * 8: ("Same paragraph that is long.", "Other."),
        b"b" * 8: ("Unique text.", "Same paragraph that is long.", "Unique text."),
    }
    counts: dict[str, int] = {}

    def inc(name, amount=1):
        counts[name] = counts.get(name, 0) + amount

    unique = list(dedup.first_of_each_content(sorted(map(dedup.content_pair, docs.items())), inc))
    assert sorted(unique) == [(b"a" * 8, docs[b"a" * 8]), (b"b" * 8, docs[b"b" * 8])]
    refs = sorted(ref for doc in unique for ref in dedup.paragraph_refs(doc, min_chars=15))
    repeats = list(dedup.repeated_paragraphs(refs, inc))
    assert repeats == [(b"b" * 8 + b"\x00" + (1).to_bytes(4, "big"), b"")]  # a's copy is kept
    assert repeats == [(dedup.repeat_key(dedup.ParagraphOccurrence(b"b" * 8, 1)), b"")]
    assert dedup.repeated_index(repeats[0][0]) == 1
    assert dedup.repeated_index(dedup.document_record_key(b"b" * 8)) is None
    kept = list(
        dedup.drop_repeated_paragraphs(
            sorted(repeats + [dedup.document_pair(d) for d in unique]), inc
        )
    )
    assert kept == [(b"a" * 8, docs[b"a" * 8]), (b"b" * 8, ("Unique text.", "Unique text."))]
    assert counts == {"skipped_duplicate_document": 1, "paragraphs_duplicate": 1}


def test_sentence_length_histogram_and_the_long_median_warning():
    normal = segment_stats.sentence_length_counts(["x" * 80] * 5 + ["x" * 400] * 4)
    histogram = segment_stats.sentence_length_histogram(normal)
    assert {low: count for low, count in histogram.items() if count} == {"50": 5, "300": 4}
    assert segment_stats.sentence_length_warnings(histogram) == []
    long = segment_stats.sentence_length_histogram(
        segment_stats.sentence_length_counts(["x" * 80] * 4 + ["x" * 428] * 5)
    )
    assert segment_stats.sentence_length_warnings(long) == [
        (
            "the median sentence is 300-499 characters long (typical prose: 60-200): sentences "
            "were probably "
            "not split; check the input format and the text"
        )
    ]
    assert segment_stats.sentence_length_warnings(segment_stats.sentence_length_histogram({})) == []
