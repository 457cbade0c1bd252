"""Decontamination: evaluation sets read in fine-tuning's formats, n-gram overlaps as pure
functions, and `albert decontaminate` on real books with SQuAD dev passages planted in them."""

from __future__ import annotations

import json
import logging
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import shared_path
from decontamination_testdata import planted_books

from albert.errors import StageError
from pipelines.common.segmented_corpus import input_files, read_documents
from pipelines.decontaminate import contamination
from pipelines.decontaminate import stage as decontaminate
from pipelines.decontaminate.eval_sets import EvalExample, EvalSplit, eval_splits, read_examples
from pipelines.segment import stage as segment

pytestmark = pytest.mark.backend_free

REPO = Path(__file__).resolve().parents[1]
N = contamination.DEFAULT_NGRAM
PASSAGE = (
    "The Normans were the people who in the 10th and 11th centuries gave their name to Normandy, "
    "a region in France. They were descended from Norse raiders and pirates from Denmark, Iceland "
    "and Norway who, under their leader Rollo, agreed to swear fealty to King Charles III."
)


# --- evaluation sets -------------------------------------------------------------------------


def test_a_glue_root_gives_each_task_s_evaluation_splits_and_a_row_is_an_example():
    splits = eval_splits(str(shared_path("glue")))
    assert [(s.name, s.split) for s in splits] == [
        ("cola", "dev"),
        ("mrpc", "dev"),
        ("sst2", "dev"),
        ("stsb", "dev"),
    ]
    mrpc = next(read_examples(splits[1]))
    assert len(mrpc.texts) == 2  # both sentences, compared one by one
    train = eval_splits(str(shared_path("glue", "CoLA", "train.tsv")))
    assert [(s.name, s.split, s.format) for s in train] == [("cola", "train", "glue")]


def test_squad_and_race_examples_are_questions_with_their_passage():
    (squad,) = eval_splits(str(shared_path("squad", "dev-v1.1.json")))
    assert (squad.name, squad.split) == ("squad", "dev-v1.1")
    first = next(read_examples(squad))
    assert len(first.texts) == 2 and len(first.texts[0]) > len(first.texts[1])  # context, question
    race = eval_splits(str(shared_path("race", "RACE")))
    assert [(s.name, s.split) for s in race] == [("race", "dev"), ("race", "test")]
    question = next(read_examples(race[0]))
    assert len(question.texts) == 6  # article, question, four options


def test_text_and_jsonl_of_one_s_own(tmp_path):
    (tmp_path / "mine.txt").write_text("first line\n\nsecond line\n")
    (tmp_path / "mine.jsonl").write_text('{"id": "a", "text": "one"}\n{"text": "two"}\n')
    text = [e for split in eval_splits(str(tmp_path / "mine.txt")) for e in read_examples(split)]
    assert text == [EvalExample("1", ("first line",)), EvalExample("3", ("second line",))]
    (jsonl,) = eval_splits(str(tmp_path / "mine.jsonl"))
    assert (jsonl.name, jsonl.split) == ("mine", "all")
    assert [e.id for e in read_examples(jsonl)] == ["a", "2"]


def test_a_user_s_task_directory_gives_its_dev_file_s_text_columns(tmp_path):
    """The task fine-tuning reads (its task.yaml): the dev file's rows, their text columns."""
    task = tmp_path / "reviews"
    task.mkdir()
    (task / "train.csv").write_text("title,body,stars\nA title,Some body,1\n")
    (task / "dev.csv").write_text('title,body,stars\nFirst,"A body, quoted",2\nSecond,Two,1\n')
    (task / "task.yaml").write_text(
        "name: reviews\ntrain: train.csv\ndev: dev.csv\ntext_column: [title, body]\n"
        "label_column: stars\n"
    )
    (split,) = eval_splits(str(task))
    assert (split.name, split.split, split.format, split.columns) == (
        "reviews",
        "dev",
        "task",
        ("title", "body"),
    )
    assert list(read_examples(split)) == [
        EvalExample("2", ("First", "A body, quoted")),
        EvalExample("3", ("Second", "Two")),
    ]
    (task / "task.yaml").write_text("train: train.csv\ntext_column: body\n")  # no dev file
    (split,) = eval_splits(str(tmp_path))  # a directory of sets
    assert (split.name, split.split) == ("reviews", "train")
    assert [e.texts for e in read_examples(split)] == [("Some body",)]


@pytest.mark.parametrize(
    "name, content, reason",
    [
        ("missing.json", None, "no such evaluation file or directory"),
        ("set.csv", "a,b\n", "unknown evaluation format"),
        ("dir", "", "unknown evaluation format: a directory"),
        ("train.tsv", "a\tb\n", "outside a GLUE task directory"),
    ],
)
def test_a_path_in_no_known_format_is_one_line(tmp_path, name, content, reason):
    path = tmp_path / name
    if name == "dir":
        path.mkdir()
    elif content is not None:
        path.write_text(content)
    with pytest.raises(StageError, match=reason) as error:
        eval_splits(str(path))
    assert str(error.value).startswith(str(path)) and "\n" not in str(error.value)


def test_a_bad_jsonl_record_names_its_line(tmp_path):
    (tmp_path / "bad.jsonl").write_text('{"text": "ok"}\n{"txt": 1}\n')
    (split,) = eval_splits(str(tmp_path / "bad.jsonl"))
    with pytest.raises(StageError, match=r"bad.jsonl:2: expected a JSON object"):
        list(read_examples(split))


def test_a_directory_of_sets_says_which_directories_it_did_not_read(tmp_path, caplog):
    glue = tmp_path / "glue5"
    shutil.copytree(REPO / "tests" / "fixtures" / "tasks" / "glue" / "RTE", glue / "RTE")
    (glue / "XYZ").mkdir()
    (glue / "XYZ" / "notes.tsv").write_text("a\tb\n")
    (glue / "QNLI").mkdir()  # a task directory without dev*.tsv or test*.tsv
    (glue / "QNLI" / "train.tsv").write_text("index\tquestion\tsentence\tlabel\n")
    with caplog.at_level(logging.WARNING, logger="pipelines.decontaminate.eval_sets"):
        assert [(s.name, s.split) for s in eval_splits(str(glue))] == [("rte", "dev")]
    (line,) = [
        r.getMessage() for r in caplog.records if r.name == "pipelines.decontaminate.eval_sets"
    ]
    assert line.startswith(f"{glue}: 2 directories not read: ") and "\n" not in line
    assert f"{glue / 'QNLI'} (a GLUE task directory without dev*.tsv or test*.tsv)" in line
    neither = "neither a GLUE task directory, a RACE split nor a task directory with a task.yaml"
    assert f"{glue / 'XYZ'} ({neither})" in line
    assert line.endswith("(--strict makes this an error)")
    with pytest.raises(StageError, match=rf"^{glue}: 2 directories not read: .*QNLI"):
        eval_splits(str(glue), strict=True)
    caplog.clear()  # a training split is left out by design, without a word
    with caplog.at_level(logging.WARNING, logger="pipelines.decontaminate.eval_sets"):
        race = eval_splits(str(shared_path("race", "RACE")), strict=True)
    assert [s.split for s in race] == ["dev", "test"] and not caplog.records


# --- n-gram overlap --------------------------------------------------------------------------


def index_of(*examples: EvalExample, n: int = N):
    ngrams, shared, checkable, ids = contamination.split_index(examples, 0, n)
    return contamination.merge_index([(ngrams, shared)]), checkable, ids


def test_a_shared_context_is_indexed_once_and_short_texts_cannot_match():
    index, checkable, ids = index_of(
        EvalExample("q1", (PASSAGE, "Who were the Normans?")),
        EvalExample("q2", (PASSAGE, "Where is Normandy?")),
        EvalExample("short", ("Too short to hold a thirteen word n-gram.",)),
    )
    ngrams, shared = index
    assert checkable == 2 and ids == ["q1", "q2", "short"]
    assert len(ngrams) == len(ngrams.text_ids) > 0
    assert set(ngrams.text_ids.tolist()) == {0}  # q1's context only
    assert shared == {0: (0, 1)}


def test_an_edited_copy_is_found_across_sentence_lines_with_its_longest_run():
    index, _, _ = index_of(EvalExample("q1", (PASSAGE, "Who were the Normans?")))
    words = PASSAGE.upper().replace(",", "").split()
    words[20] = "CHANGED"  # splits the passage into runs of 20 and 26 words
    lines = ["Unrelated opening sentence here.\n", " ".join(words[:30]) + "\n"]
    lines += [" ".join(words[30:]) + "\n", "A closing sentence.\n"]
    overlaps, touched = contamination.document_overlaps("doc:0", lines, index, N)
    assert overlaps == [contamination.Overlap(0, "doc:0", 1, 2, len(words) - 21)]
    assert touched == {1, 2}
    assert contamination.remaining_lines(lines, touched) == [lines[0], lines[3]]


def test_a_document_without_a_shared_ngram_has_no_overlap():
    index, _, _ = index_of(EvalExample("q1", (PASSAGE,)))
    twelve = " ".join(PASSAGE.split()[:12])  # one word short of an n-gram
    assert contamination.document_overlaps("d:0", [twelve + "\n"], index, N) == ([], set())


def test_the_report_lists_splits_in_order_and_overlaps_by_example_then_document():
    splits = [EvalSplit("squad", "dev", "squad", "s.json"), EvalSplit("mine", "all", "text", "m")]
    second = contamination.example_number(1, 0)
    overlaps = [
        contamination.Overlap(second, "b:1", 0, 0, 13),
        contamination.Overlap(1, "b:0", 2, 3, 20),
        contamination.Overlap(1, "a:5", 0, 1, 15),
    ]
    read = [(1, 1, 1, ["m1"]), (0, 3, 2, ["q0", "q1", "q2"])]
    report = contamination.contamination_report(splits, read, overlaps, N)
    squad, mine = report["sets"]
    assert (squad["examples"], squad["examples_with_ngram"], squad["contaminated"]) == (3, 2, 1)
    assert [(o["example"], o["document"]) for o in squad["overlaps"]] == [
        ("q1", "a:5"),
        ("q1", "b:0"),
    ]
    assert mine["overlaps"] == [{"example": "m1", "document": "b:1", "lines": [0, 0], "words": 13}]


# --- the stage on real data ------------------------------------------------------------------


@pytest.fixture(scope="module")
def planted(tmp_path_factory):
    """Two real books with three edited SQuAD dev passages planted in each, segmented;
    decontaminated with --remove in this process."""
    root = tmp_path_factory.mktemp("decontaminate")
    books = [
        shared_path("books", "blake-poems.txt"),
        shared_path("books", "shakespeare-caesar.txt"),
    ]
    squad = shared_path("squad", "dev-v1.1.json")
    (root / "raw").mkdir()
    _, questions = planted_books(books, squad, 3, root / "raw")
    corpus = str(root / "segment")
    segment.run(segment.SegmentConfig(input=[str(root / "raw")], output=corpus, num_shards=2))
    config = decontaminate.DecontaminateConfig(
        corpus=corpus, eval=[str(squad), str(shared_path("race", "RACE"))], output="", remove=True
    )
    config.output = str(root / "one")
    report = decontaminate.run(config)
    return root, questions, report, config


def test_every_planted_question_is_found_and_nothing_else(planted):
    _, questions, report, _ = planted
    squad, *race = report["sets"]
    assert {o["example"] for o in squad["overlaps"]} == questions
    assert squad["contaminated"] == len(questions) and squad["examples"] == 10570
    assert all(split["contaminated"] == 0 for split in race)


def test_remove_writes_a_readable_corpus_without_the_passages(planted, tmp_path):
    root, _, report, config = planted
    cleaned = root / "one"
    files = input_files(str(cleaned))
    assert [Path(f).name for f in files] == ["part-00000-of-00002.txt", "part-00001-of-00002.txt"]
    stats = json.loads((cleaned / "stats.json").read_text())
    removed = report["corpus"]["removed"]
    assert stats["decontamination"]["sentences_removed"] == removed["sentences_removed"] > 0
    assert stats["sentences_out"] == sum(
        len(lines) for f in files for _, lines in read_documents(f)
    )
    again = decontaminate.run(
        config.model_copy(
            update={"corpus": str(cleaned), "remove": False, "output": str(tmp_path / "again")}
        )
    )
    assert [split["contaminated"] for split in again["sets"]] == [0, 0, 0]
    assert not (tmp_path / "again" / "stats.json").exists()


def test_two_worker_processes_write_the_same_bytes(planted):
    root, _, _, config = planted
    command = [sys.executable, "-m", "pipelines.decontaminate", "--corpus", config.corpus]
    for path in config.eval:
        command += ["--eval", path]
    command += ["--output", str(root / "two"), "--remove"]
    command += ["--direct_running_mode=multi_processing", "--direct_num_workers=2"]
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    subprocess.run(command, check=True, cwd=REPO, env=env, capture_output=True)
    one = sorted(p.name for p in (root / "one").iterdir())
    assert one == sorted(p.name for p in (root / "two").iterdir())
    for name in one:
        assert (root / "one" / name).read_bytes() == (root / "two" / name).read_bytes(), name


@pytest.mark.parametrize(
    "eval_name, content, reason",
    [
        ("missing.json", None, "no such evaluation file or directory"),
        ("set.parquet", "x", "unknown evaluation format"),
        ("empty.txt", "\n\n", "no examples in this evaluation set"),
    ],
)
def test_bad_evaluation_input_is_one_line_and_exit_2(
    planted, tmp_path, capsys, eval_name, content, reason
):
    _, _, _, config = planted
    path = tmp_path / eval_name
    if content is not None:
        path.write_text(content)
    output = tmp_path / "out"
    flags = ["--corpus", config.corpus, "--eval", str(path), "--output", str(output)]
    assert decontaminate.main(flags) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and reason in lines[0] and str(path) in lines[0]
    assert not output.exists()


def small_corpus(tmp_path: Path, stats: bytes | None) -> Path:
    """A directory holding a readme.txt and, unless None, `stats` as its stats.json."""
    corpus = tmp_path / "C"
    corpus.mkdir()
    (corpus / "readme.txt").write_text("How to read this directory.\n")
    if stats is not None:
        (corpus / "stats.json").write_bytes(stats)
    return corpus


@pytest.mark.parametrize(
    "stats, reason",
    [
        (None, "not a segment output (no stats.json)"),
        (b"[1, 2]", "stats.json: not a segment output (a JSON array, not segment's fields"),
        (b'{"documents": 3}', "stats.json: not a segment output (no documents_out"),
        (b"\xff", "stats.json: not UTF-8 text"),
    ],
)
def test_a_corpus_that_is_not_a_segment_output_is_one_line_and_exit_2(
    tmp_path, capsys, stats, reason
):
    corpus = small_corpus(tmp_path, stats)
    (tmp_path / "e.txt").write_text("a line of an evaluation set\n")
    output = tmp_path / "D"
    flags = ["--corpus", str(corpus), "--eval", str(tmp_path / "e.txt"), "--output", str(output)]
    assert decontaminate.main([*flags, "--remove"]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and f"{corpus}" in lines[0] and reason in lines[0], lines
    assert not output.exists()


def test_strict_makes_a_directory_not_read_an_error(tmp_path, capsys):
    corpus = small_corpus(tmp_path, b'{"documents_out": 1, "sentences_out": 1, "shards": []}')
    glue = tmp_path / "glue"
    shutil.copytree(REPO / "tests" / "fixtures" / "tasks" / "glue" / "RTE", glue / "RTE")
    (glue / "XYZ").mkdir()
    flags = ["--corpus", str(corpus), "--eval", str(glue), "--output", str(tmp_path / "D")]
    assert decontaminate.main([*flags, "--strict"]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert f"{glue}: 1 directory not read: {glue / 'XYZ'} (neither" in line
    assert not (tmp_path / "D").exists()
