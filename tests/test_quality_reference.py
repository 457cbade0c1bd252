"""The reference model (pipelines.quality.reference): its counts are sums (the same model in any
order), its score puts text like the reference above a template; the chain's candidates and
`reconsider` (kept with both scores, audited as kept by the reference model; absolute checks never
overridden); segment's dry run and override end to end on the in-process runner."""

from __future__ import annotations

import json
import pickle
from collections import Counter

import numpy as np
import pytest

from pipelines.quality import audit, chain, reference
from pipelines.quality.config import AUDIT_FILE
from pipelines.quality.settings import QualitySettings

pytestmark = pytest.mark.backend_free

REFERENCE = [
    (
        (
            f"The committee met on day {n} to discuss the annual budget and the plans for the "
            "new library. Members agreed that the proposal needed more work before the vote."
        ),
        f"The minutes of meeting {n} were read and approved, and the chair thanked the members.",
        "Questions from the public were taken at the end, and the meeting closed at nine.",
    )
    for n in range(40)
]
SHORT = ("The committee met to discuss the annual budget and the plans for the new library.",)
TEMPLATE = tuple(
    f"Buy cheap phone case online in {city}. Best phone case prices in {city} today!"
    for city in ("London", "Paris", "Berlin", "Madrid", "Dublin", "Leeds", "Boston", "Miami")
)


def model_of(documents) -> reference.ReferenceModel:
    counts = reference.ReferenceCounts.empty()
    for paragraphs in documents:
        counts.add(paragraphs)
    return reference.ReferenceModel.from_counts(counts)


def settings(languages=(), **thresholds) -> QualitySettings:
    values = {name.replace("__", "."): value for name, value in thresholds.items()}
    return QualitySettings.from_options(list(languages), None, [], values, "redact", False)


def clean(paragraphs, s, language=("en", 0.9)):
    counts: Counter = Counter()
    cleaned = chain.clean_document(
        tuple(paragraphs), s, lambda text: language, lambda k, n: counts.update({k: n})
    )
    return cleaned, counts


def test_the_counts_are_sums_whatever_the_order_and_the_split():
    whole = reference.ReferenceCounts.empty()
    for paragraphs in REFERENCE:
        whole.add(paragraphs)
    halves = [reference.ReferenceCounts.empty() for _ in range(2)]
    for index, paragraphs in enumerate(reversed(REFERENCE)):
        halves[index % 2].add(paragraphs)
    merged = halves[0].merge(halves[1])
    assert np.array_equal(merged.words, whole.words) and np.array_equal(merged.pairs, whole.pairs)
    assert whole.total == sum(len(p.split()) for doc in REFERENCE for p in doc)
    carried = pickle.loads(pickle.dumps(whole))  # as a runner carries it: its non-zero buckets
    assert np.array_equal(carried.words, whole.words) and np.array_equal(carried.pairs, whole.pairs)
    assert model_of(REFERENCE).score(SHORT) == model_of(reversed(REFERENCE)).score(SHORT)


def test_text_like_the_reference_scores_above_a_template_and_repeating_lowers_a_score():
    model = model_of(REFERENCE)
    assert model.score(SHORT) > 1.0
    assert model.score(TEMPLATE) < -0.3
    assert model.score(SHORT * 4) < model.score(SHORT)
    assert model_of([]).score(SHORT) == pytest.approx(np.log(0.5))
    assert model.score(("word",)) == 0.0


def test_pairs_holding_a_number_or_a_name_of_digits_are_no_evidence():
    model = model_of(REFERENCE)
    timings = "0m0.035s 2008-09-15 20:21 loop0 some_command"
    assert model.score((SHORT[0] + " " + timings,)) == model.score(SHORT)
    assert model.score((timings,)) == 0.0


def test_a_pair_counted_more_often_than_its_first_word_is_a_shared_bucket_not_evidence():
    model = model_of(REFERENCE)
    bucket = int(reference.pair_keys(reference.word_keys("lint committee"))[0]) % reference.BUCKETS
    pairs = model.pairs.copy()
    pairs[bucket] += 5  # other pairs hashed into the same bucket; "lint" was never seen
    shared = reference.ReferenceModel(model.words, pairs, model.total)
    assert shared.score(("lint committee",)) == pytest.approx(np.log(0.5))


def test_a_candidate_with_a_listing_is_judged_on_its_prose_lines():
    s = settings(reference_model__min_reference_words=100)
    listing_lines = ("$ gs -q -dNOPAUSE -dBATCH -sDEVICE=pdfwrite -sOutputFile=bla.pdf -f a.pdf",)
    cleaned, _ = clean(SHORT + listing_lines, s)
    assert cleaned.overridable
    model = model_of(REFERENCE)
    judged = chain.reconsider(cleaned, model, s)
    assert judged.reference[0] == round(model.score(SHORT), 6)
    assert model.score(cleaned.paragraphs) < judged.reference[0]


def test_a_candidate_is_kept_by_the_reference_model_with_both_scores_and_audited():
    s = settings(reference_model__min_reference_words=100)
    cleaned, counts = clean(SHORT, s)
    assert cleaned.overridable and cleaned.removal.rule == "gopher_quality.min_doc_words"
    assert not counts["quality_removed_gopher_quality.min_doc_words"]  # the transform counts it
    kept = chain.reconsider(cleaned, model_of(REFERENCE), s)
    assert kept.kept_by_reference and not kept.removed
    score, bound = kept.reference
    assert score > bound == -0.3
    record = audit.removal_record("a.jsonl#1", kept, SHORT, True, audit.KEPT_BY_REFERENCE)
    assert record["outcome"] == "kept_by_reference_model"
    assert (record["value"], record["threshold"]) == (15, 50)
    assert (record["reference_score"], record["reference_threshold"]) == (score, -0.3)
    removed = chain.reconsider(cleaned, model_of(REFERENCE[:1]), s)  # too few reference words
    assert removed.removed and removed.reference is not None


def test_a_low_scoring_target_language_document_is_a_candidate_a_foreign_one_never():
    s = settings(["en"], reference_model__min_reference_words=100)
    cleaned, counts = clean(SHORT, s, ("en", 0.25))  # under en's 0.5, and under 50 words
    assert cleaned.removal == chain.Removal("language.low_score", 0.25, 0.5) and cleaned.overridable
    assert counts == {"language_en": 1}
    kept = chain.reconsider(cleaned, model_of(REFERENCE), s)
    assert kept.kept_by_reference
    record = audit.removal_record("a.jsonl#1", kept, SHORT, True, audit.KEPT_BY_REFERENCE)
    assert (record["rule"], record["language_score"], record["threshold"]) == (
        "language.low_score",
        0.25,
        0.5,
    )
    assert record["reference_score"] == kept.reference[0] > -0.3
    foreign, counts = clean(SHORT, s, ("fr", 0.25))
    assert foreign.removal.rule == "language.not_target" and not foreign.overridable
    assert counts["quality_removed_language.not_target"] == 1
    repeated, counts = clean(REFERENCE[0] * 3, s, ("en", 0.25))  # and an absolute check fails
    assert repeated.removal.rule == "gopher_repetition.dup_para_frac" and not repeated.overridable
    off = QualitySettings.from_options(["en"], None, ["reference_model"], {}, "redact", False)
    cleaned, counts = clean(SHORT, off, ("en", 0.25))
    assert not cleaned.overridable and counts["quality_removed_language.low_score"] == 1


def test_absolute_checks_are_never_candidates_and_the_model_can_be_switched_off():
    repeated = REFERENCE[0] * 3  # repeated paragraphs: gopher_repetition.dup_para_frac
    cleaned, counts = clean(repeated, settings())
    assert cleaned.removal.rule == "gopher_repetition.dup_para_frac" and not cleaned.overridable
    assert counts["quality_removed_gopher_repetition.dup_para_frac"] == 1
    off = QualitySettings.from_options([], None, ["reference_model"], {}, "redact", False)
    cleaned, counts = clean(SHORT, off)
    assert not cleaned.overridable and counts["quality_removed_gopher_quality.min_doc_words"] == 1


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    folder = tmp_path_factory.mktemp("reference")
    documents = [{"id": str(n), "text": "\n".join(doc)} for n, doc in enumerate(REFERENCE)]
    documents += [{"id": "short", "text": SHORT[0]}, {"id": "spam", "text": "\n".join(TEMPLATE)}]
    path = folder / "in.jsonl"
    path.write_text("".join(json.dumps(d) + "\n" for d in documents), encoding="utf-8")
    return folder


def segment_run(corpus, name, **options):
    from pipelines.segment import stage as segment

    config = segment.SegmentConfig(
        input=[str(corpus / "in.jsonl")],
        output=str(corpus / name),
        near_dedup=False,
        min_document_chars=0,
        quality_thresholds=["reference_model.min_reference_words=100"],
        **options,
    )
    stats = segment.run(config)
    lines = corpus / name / AUDIT_FILE
    return stats, [json.loads(line) for line in lines.read_text(encoding="utf-8").splitlines()]


def test_segment_keeps_by_the_reference_model_and_a_dry_run_removes_nothing(corpus):
    stats, records = segment_run(corpus, "run")
    quality = stats["quality"]
    assert quality["kept_by_reference_model"] == {"gopher_quality.min_doc_words": 1}
    assert {(r["document"], r["outcome"]) for r in records} == {
        ("in.jsonl#42", "removed"),
        ("in.jsonl#41", "kept_by_reference_model"),
    }
    assert quality["kept_examples"]["gopher_quality.min_doc_words"][0]["text"] == SHORT[0]
    assert stats["documents_out"] == 41
    dry, dry_records = segment_run(corpus, "dry", quality_dry_run=True)
    assert dry["documents_out"] == 42 and dry["quality"]["settings"]["dry_run"]
    spam = [r for r in dry_records if r["document"] == "in.jsonl#42"]
    assert spam[0]["outcome"] == "kept_dry_run"
