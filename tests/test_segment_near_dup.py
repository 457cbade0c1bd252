"""Near-duplicate removal in the segment Beam job, on real books with planted near-copies."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from conftest import shared_path

from albert.errors import NothingNew, StageError
from flows.report.sections import segment_section
from pipelines.common.word_ngrams import normalised_words, word_ngrams
from pipelines.dedup import minhash
from pipelines.dedup.near_config import AUDIT_FILE
from pipelines.segment import stage as segment
from pipelines.segment.stage import SegmentConfig

pytestmark = pytest.mark.backend_free

BOOKS = ("shakespeare-caesar.txt", "shakespeare-macbeth.txt", "blake-poems.txt")


def drop_a_verse(text: str) -> str:
    paragraphs = text.split("\n\n")
    middle = len(paragraphs) // 2
    return "\n\n".join(paragraphs[:middle] + paragraphs[middle + 1 :])


def change_words(text: str) -> str:
    generator = random.Random(44)
    return " ".join(w if generator.random() > 0.01 else "changed" for w in text.split(" "))


def change_case_and_punctuation(text: str) -> str:
    return text.lower().replace(",", " ;").replace(".", "!")


def add_a_notice(text: str) -> str:
    notice = "This text was scanned and proofread by volunteers of a digital library.\n\n"
    return notice + text + "\n\nEnd of the digitised edition. Corrections welcome.\n"


EDITS = {
    "verse-dropped": ("shakespeare-caesar.txt", drop_a_verse),
    "words-changed": ("shakespeare-macbeth.txt", change_words),
    "case-punctuation": ("shakespeare-caesar.txt", change_case_and_punctuation),
    "notice-added": ("blake-poems.txt", add_a_notice),
}


def shingles(text: str) -> set[str]:
    return set(word_ngrams(normalised_words(text), 5))


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Path:
    """The books, a near-copy of each kind, a document shorter than one shingle, an empty one."""
    directory = tmp_path_factory.mktemp("near-dup-corpus")
    for name in BOOKS:
        (directory / name).write_bytes(shared_path("books", name).read_bytes())
    for planted, (name, edit) in EDITS.items():
        original = shared_path("books", name).read_text(encoding="latin-1")
        copy = edit(original)
        assert minhash.jaccard(shingles(original), shingles(copy)) >= 0.8, planted
        (directory / f"{planted}.txt").write_text(copy, encoding="latin-1")
    (directory / "short.jsonl").write_text(
        json.dumps({"text": "Too short to compare."}) + "\n" + json.dumps({"text": "   "}) + "\n"
    )
    return directory


def run(corpus: Path, out: Path, workers: int = 1, **fields) -> dict:
    flags = ["--direct_running_mode=multi_threading", f"--direct_num_workers={workers}"]
    config = SegmentConfig(
        input=[str(corpus)],
        output=str(out),
        fallback_encoding="latin-1",
        min_document_chars=0,
        num_shards=2,
        **{"quality": False, **fields},  # cleaning first would make a notice-added copy exact
    )
    return segment.run(config, flags)


def outputs(directory: Path) -> dict[str, bytes]:
    return {str(p.relative_to(directory)): p.read_bytes() for p in sorted(directory.rglob("*.*"))}


@pytest.fixture(scope="module")
def segmented(corpus, tmp_path_factory) -> dict[int, Path]:
    root = tmp_path_factory.mktemp("near-dup-out")
    return {
        workers: (root / f"w{workers}", run(corpus, root / f"w{workers}", workers))
        for workers in (1, 2)
    }


def test_every_planted_near_copy_is_removed_and_nothing_else(segmented):
    out, stats = segmented[1]
    near = stats["near_duplicates"]
    assert near["documents"] == stats["skipped"]["near_duplicate"] == len(EDITS)
    assert near["clusters"] == 3 and near["of_reference"] == 0 and near["characters"] > 0
    assert near["unchecked_short"] == 1  # "Too short to compare." (4 words); "   " is empty
    assert stats["skipped"]["empty"] == 1
    assert stats["documents_out"] == len(BOOKS) + 1
    audit = [json.loads(line) for line in (out / AUDIT_FILE).read_text().splitlines()]
    kept_of = {record["removed"]: record["kept"] for record in audit}
    assert list(kept_of) == sorted(kept_of)
    assert all(record["similarity"] >= 0.8 and not record["reference"] for record in audit)
    # one document kept per book (the smallest key of its cluster), every other copy removed
    for book in BOOKS:
        copies = [book] + [f"{planted}.txt" for planted, (name, _) in EDITS.items() if name == book]
        keys = sorted(segment.document_key(name, "0").hex() for name in copies)
        assert keys[0] not in kept_of
        assert [kept_of[key] for key in keys[1:]] == [keys[0]] * (len(keys) - 1)


def test_one_and_two_workers_give_the_same_bytes(segmented):
    (one, stats_one), (two, stats_two) = segmented[1], segmented[2]
    assert stats_one == stats_two
    assert outputs(one) == outputs(two)
    assert sorted(p.name for p in one.glob(f"{minhash.SIGNATURES}*")) == [
        "near_dup_signatures-00000-of-00002.minhash",
        "near_dup_signatures-00001-of-00002.minhash",
        "near_dup_signatures.json",
    ]


def test_a_later_run_removes_copies_of_a_reference_corpus(segmented, corpus, tmp_path):
    reference, _ = segmented[1]
    later = tmp_path / "later"
    later.mkdir()
    copy = add_a_notice(shared_path("books", "shakespeare-macbeth.txt").read_text("latin-1"))
    (later / "macbeth-again.txt").write_text(copy, encoding="latin-1")
    (later / "new.txt").write_bytes(shared_path("books", "shakespeare-hamlet.txt").read_bytes())
    signatures = str(reference)
    stats = run(later, tmp_path / "out", near_dup_reference=[signatures])
    assert stats["near_duplicates"]["documents"] == stats["near_duplicates"]["of_reference"] == 1
    assert stats["documents_out"] == 1
    (record,) = [json.loads(line) for line in (tmp_path / "out" / AUDIT_FILE).open()]
    assert (
        record["reference"]
        and record["removed"] == segment.document_key("macbeth-again.txt", "0").hex()
    )
    macbeth = [
        segment.document_key(n, "0").hex() for n in ("shakespeare-macbeth.txt", "words-changed.txt")
    ]
    assert record["kept"] == min(macbeth)  # the copy of Macbeth the reference kept
    with pytest.raises(StageError, match="signatures made with"):
        run(later, tmp_path / "other", near_dup_reference=[signatures], near_dup_ngram=3)
    assert not (tmp_path / "other").exists()


def test_a_run_of_near_copies_of_the_reference_only_is_nothing_new(segmented, tmp_path):
    """What a model line's night answers 'nothing new' (flows/line/night.py): a NothingNew, no
    output."""
    reference, _ = segmented[1]
    later = tmp_path / "later"
    later.mkdir()
    copy = add_a_notice(shared_path("books", "blake-poems.txt").read_text("latin-1"))
    (later / "blake-again.txt").write_text(copy.upper(), encoding="latin-1")
    with pytest.raises(NothingNew, match="near-copies of the reference corpus: 1$"):
        run(later, tmp_path / "out", near_dup_reference=[str(reference)])
    assert not (tmp_path / "out").exists()


def test_switched_off_nothing_near_duplicate_is_removed_or_written(corpus, tmp_path):
    stats = run(corpus, tmp_path / "off", near_dedup=False)
    assert (
        stats["near_duplicates"]["documents"] == 0 and stats["near_duplicates"]["settings"] is None
    )
    assert stats["documents_out"] == len(BOOKS) + 1 + len(EDITS)
    assert not (tmp_path / "off" / AUDIT_FILE).exists()
    assert not list((tmp_path / "off").glob(f"{minhash.SIGNATURES}*"))


def test_the_run_report_shows_the_counts_and_example_pairs(segmented, tmp_path):
    out, stats = segmented[1]
    (tmp_path / "segment").symlink_to(out)
    (tmp_path / "plots").mkdir()
    section = segment_section(tmp_path, stats, tmp_path / "plots")
    assert "| near-duplicate documents removed | 4 in 3 clusters (" in section
    assert "Examples from `near_duplicates.jsonl`:" in section
    assert section.count(" | 0.") + section.count(" | 1.00 |") >= 3
    off = segment_section(tmp_path, {**stats, "near_duplicates": {"settings": None}}, tmp_path)
    assert "| near-duplicate documents removed | off |" in off
