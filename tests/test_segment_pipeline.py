"""The segmentation Beam job end to end: output format, skip counts, determinism, bad input."""

from __future__ import annotations

import bz2
import json
import re
import shutil
from pathlib import Path

import pytest
from conftest import shared_path

from albert.errors import StageError
from pipelines.segment import stage as segment
from pipelines.segment.stage import SegmentConfig

pytestmark = pytest.mark.backend_free

FIXTURES = Path(__file__).parent / "fixtures" / "segment"


def outputs(directory: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(directory.iterdir())}


def documents(directory: Path) -> list[list[str]]:
    text = b"".join(p.read_bytes() for p in sorted(directory.glob("*.txt"))).decode("utf-8")
    assert text.endswith("\n\n")
    return [block.split("\n") for block in text[:-2].split("\n\n")]


def run(
    tmp_path: Path, inputs: list[str], name="out", beam_args=None, **fields
) -> tuple[dict, Path]:
    out = tmp_path / name
    fields.setdefault("quality", False)  # the fixtures' short documents are below Gopher's bounds
    stats = segment.run(SegmentConfig(input=inputs, output=str(out), **fields), beam_args)
    return stats, out


def test_fixtures_give_each_skip_reason_and_the_reference_format(tmp_path):
    stats, out = run(
        tmp_path,
        [
            str(FIXTURES / "articles.xml"),
            str(FIXTURES / "notes.txt"),
            str(FIXTURES / "records.jsonl"),
            str(FIXTURES / "book.txt"),
        ],
        on_error="skip",
        min_document_chars=100,
        num_shards=3,
    )
    assert stats["skipped"] == {
        "bad_file": 0,
        "bad_record": 1,
        "namespace": 1,
        "redirect": 1,
        "disambiguation": 1,
        "empty": 1,
        "duplicate_document": 1,
        "near_duplicate": 0,
        "too_short": 2,
        "quality": 0,
        "no_words": 0,
    }
    assert stats["formats"] == {"wikipedia": 1, "text": 1, "jsonl": 1, "books": 1}
    assert stats["documents_in"] == 8 + 3 + 3 + 1
    assert stats["paragraphs_duplicate"] == 1
    found = documents(out)
    assert len(found) == stats["documents_out"] == 7
    assert sum(len(d) for d in found) == stats["sentences_out"]
    assert stats["shards"] == [f"part-0000{i}-of-00003.txt" for i in range(3)]
    assert json.loads((out / "stats.json").read_text()) == stats
    sentences = [s for d in found for s in d]
    assert (
        sentences.count(
            "Sailors relied on the light to avoid the rocks near the harbour entrance at night."
        )
        == 1
    )
    assert "It serves as a navigational aid for maritime pilots at sea." in sentences
    assert (
        "Captain Reed stood at the wheel--silent, watchful--and said nothing at all." in sentences
    )
    assert not any("Gutenberg" in s or "|" in s or "[[" in s for s in sentences)


def test_same_output_bytes_whatever_the_number_of_workers(tmp_path):
    inputs = [
        str(FIXTURES / "articles.xml"),
        str(FIXTURES / "notes.txt"),
        str(shared_path("wikipedia", "testcorpus.xml.bz2")),
        str(shared_path("books", "shakespeare-macbeth.txt")),
        str(shared_path("books", "blake-poems.txt")),
    ]
    results = []
    for workers in (1, 2):
        flags = ["--direct_running_mode=multi_threading", f"--direct_num_workers={workers}"]
        stats, out = run(
            tmp_path, inputs, name=f"w{workers}", beam_args=flags, min_document_chars=10
        )
        results.append((stats, outputs(out)))
    assert results[0] == results[1]
    # articles.xml: 3 (min 10 chars keeps the stub), notes: 3, testcorpus: 8 of 9 (one too short),
    # books: 2
    assert results[0][0]["documents_out"] == 3 + 3 + 8 + 2


BAD_INPUTS = [  # file name, its bytes made from articles.xml, the reason the error names
    ("cut.xml.bz2", lambda xml: bz2.compress(xml)[:-200], "truncated bz2 archive"),
    ("bad.xml.bz2", lambda xml: bz2.compress(xml)[:10] + b"\0" * 100, "corrupt bz2 archive"),
    ("cut.xml", lambda xml: xml[:-400], "malformed XML"),
    ("latin.txt", lambda xml: "Déjà vu, here.\n".encode("latin-1"), "line 1: not UTF-8"),
    ("empty.txt", lambda xml: b"", "empty file"),
]


# A JSONL record whose text holds a lone surrogate escape (a str no UTF-8 encoder takes).
SURROGATE_RECORD = b'{"text": "' + b" ".join(b"word%d" % i for i in range(300)) + b' \\ud800"}\n'


def read_fails(path: Path, pattern: str) -> None:
    """The job's read step on `path` raises the one-line StageError matching `pattern` (the job
    fails with it: test_bad_inputs_fail_the_job_naming_the_file_or_are_skipped_and_reported)."""
    read = segment.ReadFiles(SegmentConfig(input=[str(path)], output="unused"))
    read.start_bundle()
    with pytest.raises(StageError, match=pattern):
        list(read.process(str(path)))


@pytest.mark.parametrize("name, make, reason", BAD_INPUTS)
def test_a_bad_input_file_is_an_error_naming_it(tmp_path, name, make, reason):
    bad = tmp_path / name
    bad.write_bytes(make((FIXTURES / "articles.xml").read_bytes()))
    read_fails(bad, rf"^{bad}: {reason}")


def test_bad_inputs_fail_the_job_naming_the_file_or_are_skipped_and_reported(tmp_path):
    folder = tmp_path / "in"
    folder.mkdir()
    for name, make, _ in BAD_INPUTS:
        (folder / name).write_bytes(make((FIXTURES / "articles.xml").read_bytes()))
    shutil.copy(FIXTURES / "notes.txt", folder / "notes.txt")
    (folder / "s.jsonl").write_bytes(SURROGATE_RECORD)  # a bad record, not a bad file
    read_fails(folder / "s.jsonl", rf"^{folder / 's.jsonl'}: line 1: bad JSON record .*surrogate")
    bad = [(name, reason) for name, _, reason in BAD_INPUTS] + [("s.jsonl", "line 1: bad JSON")]
    named = "|".join(re.escape(f"{folder / name}: {reason}") for name, reason in bad)
    with pytest.raises(StageError, match=rf"^({named})"):
        run(tmp_path, [str(folder / "*")])
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in"]
    stats, _out = run(tmp_path, [str(folder / "*")], on_error="skip", min_document_chars=0)
    assert stats["skipped"]["bad_file"] == len(BAD_INPUTS)
    assert stats["skipped"]["bad_record"] == 1
    reasons = {bad["file"]: bad["reason"] for bad in stats["bad_files"]}
    assert sorted(reasons) == sorted(str(folder / name) for name, _, _ in BAD_INPUTS)
    assert all(reason in reasons[str(folder / name)] for name, _, reason in BAD_INPUTS)
    assert stats["files_read"] == 2 and stats["documents_out"] >= 2


def test_pattern_matching_nothing_fails_in_both_modes_and_cli_names_it(tmp_path, capsys):
    missing = str(tmp_path / "nothing" / "*.xml")
    for mode in ("fail", "skip"):
        with pytest.raises(StageError, match="no file matches this input pattern"):
            run(tmp_path, [missing], on_error=mode)
    assert segment.main(["--input", missing, "--output", str(tmp_path / "o")]) == 2
    assert f"{missing}: no file matches" in capsys.readouterr().err
    empty = tmp_path / "empty.txt"
    empty.write_bytes(b"")
    assert segment.main(["--input", str(empty), "--output", str(tmp_path / "o")]) == 2
    assert f"{empty}: empty file" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()


def test_shared_wikipedia_sample_and_books(tmp_path):
    stats, out = run(
        tmp_path,
        [
            str(
                shared_path(
                    "wikipedia",
                    "enwiki-latest-pages-articles1.xml-p000000010p000030302-shortened.bz2",
                )
            ),
            str(shared_path("books", "blake-poems.txt")),
            str(shared_path("books", "chesterton-ball.txt")),
        ],
        fallback_encoding="latin-1",
        quality=True,
    )
    assert stats["documents_in"] == 206 + 2
    assert stats["quality"]["documents_removed"] == 0  # no rule removes a real article or book
    assert stats["skipped"]["redirect"] == 99 and stats["skipped"]["namespace"] == 1
    assert stats["skipped"]["disambiguation"] == 8
    assert stats["documents_out"] == 97 + 2 and stats["lines_fallback_encoding"] > 0
    text = b"".join(p.read_bytes() for p in sorted(out.glob("*.txt"))).decode("utf-8")
    for markup in ("{{", "}}", "[[", "]]", "<ref", "{|", "thumb|", "Category:"):
        assert markup not in text
    assert "Brunetière" in text


def test_a_chaptered_single_file_corpus_is_one_document_per_chapter(tmp_path):
    from segment_testdata import headed_chapters

    book = shared_path("books", "austen-persuasion.txt").read_text(encoding="utf-8")
    corpus = tmp_path / "scripture.txt"
    corpus.write_text(
        headed_chapters(book, chapters=40, paragraphs_per_chapter=3), encoding="utf-8"
    )
    stats, out = run(tmp_path, [str(corpus)])
    assert stats["formats"] == {"chapters": 1} and stats["documents_cut"] == 0
    assert stats["documents_out"] == 40 and stats["skipped"]["empty"] == 1  # the title page
    found = documents(out)
    assert len(found) == 40 and all(chapter[0].startswith("1 ") for chapter in found)  # verse 1
    assert not any(sentence.startswith("Genesis") for chapter in found for sentence in chapter)


def test_config_rejects_an_unknown_fallback_encoding():
    from albert.config import ConfigError, load_config

    with pytest.raises(
        ConfigError, match=r"SegmentConfig.fallback_encoding: .*unknown encoding 'latinx'"
    ):
        load_config(
            SegmentConfig, overrides={"input": ["x"], "output": "o", "fallback_encoding": "latinx"}
        )


@pytest.fixture(scope="module")
def folder_run(tmp_path_factory) -> tuple[dict, Path]:
    """One job on a directory (its sub-directories are not read) holding notes.txt and dump.xml,
    articles.xml whose talk page's <ns> is not a number, skipping bad records: stats and folder."""
    folder = tmp_path_factory.mktemp("folder") / "in"
    (folder / "nested").mkdir(parents=True)
    shutil.copy(FIXTURES / "notes.txt", folder / "notes.txt")
    (folder / "dump.xml").write_bytes(
        (FIXTURES / "articles.xml").read_bytes().replace(b"<ns>1</ns>", b"<ns>talk</ns>", 1)
    )
    shutil.copy(FIXTURES / "book.txt", folder / "nested" / "book.txt")
    stats, _out = run(folder.parent, [str(folder)], on_error="skip", min_document_chars=0)
    return stats, folder


def test_a_directory_input_reads_the_files_in_it(folder_run):
    stats, _folder = folder_run
    assert stats["input_files"] == stats["files_read"] == 2
    assert stats["formats"] == {"wikipedia": 1, "text": 1}


def test_every_file_skipped_or_no_document_left_is_an_error(tmp_path):
    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "a.txt").write_bytes(b"\xff\xfe not UTF-8\n")
    (folder / "b.txt").write_bytes(b"")
    with pytest.raises(
        StageError,
        match=(
            rf"^every input file was skipped as bad \(2 of 2\), e.g. {folder / 'a.txt'}: line 1: "
            r"not UTF-8"
        ),
    ):
        run(tmp_path, [str(folder)], on_error="skip")
    (folder / "a.txt").write_text("Too short.\n")
    with pytest.raises(
        StageError,
        match=(
            r"^no document left: 1 read from 1 file\(s\), "
            r"all skipped \(bad_file 1, too_short 1\)"
        ),
    ):
        run(tmp_path, [str(folder)], on_error="skip")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in"]


def test_a_corrupt_block_in_a_real_dump_is_a_corrupt_archive_not_malformed_xml(tmp_path):
    data = bytearray(
        shared_path(
            "wikipedia", "enwiki-latest-pages-articles1.xml-p000000010p000030302-shortened.bz2"
        ).read_bytes()
    )
    data[300_000] ^= (
        0xFF  # in the second bz2 block: its text is decompressed before its CRC is checked
    )
    bad = tmp_path / "dump.xml.bz2"
    bad.write_bytes(bytes(data))
    read_fails(bad, rf"^{bad}: corrupt bz2 archive \(Invalid data stream\)$")


def test_a_page_whose_ns_is_not_a_number_names_the_file_and_page_or_is_skipped(folder_run):
    stats, folder = folder_run
    bad = folder / "dump.xml"
    read_fails(bad, rf"^{bad}: page 12 \('Talk:Lighthouse'\): <ns> is not a number \('talk'\)$")
    assert stats["skipped"]["bad_record"] == 1 and stats["documents_out"] == 3 + 3  # + notes.txt
