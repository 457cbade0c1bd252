"""GLUE, SQuAD and RACE readers on their real layouts (shared data) and tiny exact-layout
fixtures."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import shared_path

from albert.errors import StageError
from albert.glue_tsv import read_glue
from albert.race_json import fill_option, read_race
from albert.squad_json import gold_answers, is_v2, read_squad
from model.tasks import get_task

pytestmark = pytest.mark.backend_free

FIXTURES = Path(__file__).parent / "fixtures" / "tasks"


@pytest.mark.parametrize(
    "task,split,rows",
    [
        ("sst2", "train", 67349),
        ("sst2", "dev", 872),
        ("mrpc", "train", 3668),
        ("mrpc", "dev", 408),
        ("cola", "train", 8551),
        ("cola", "dev", 1043),
        ("stsb", "train", 5749),
        ("stsb", "dev", 1500),
    ],
)
def test_shared_glue_files_read_completely(task, split, rows):
    path = shared_path("glue", get_task(task).directory, f"{split}.tsv")
    counts = {}
    examples = list(read_glue(task, str(path), split, counts=counts))
    assert len(examples) == rows == counts["read"]
    labels = {e.label for e in examples}
    if task == "stsb":
        assert min(labels) >= 0.0 and max(labels) <= 5.0 and examples[0].text_b
    else:
        assert labels == {0, 1}


def test_shared_glue_first_rows():
    mrpc = next(read_glue("mrpc", str(shared_path("glue", "MRPC", "train.tsv"))))
    assert (
        mrpc.label == 1
        and mrpc.text_a.startswith("Amrozi accused")
        and mrpc.text_b.startswith("Referring")
    )
    cola = next(read_glue("cola", str(shared_path("glue", "CoLA", "train.tsv"))))
    assert cola == type(cola)(
        "1", "Our friends won't buy this analysis, let alone the next one we propose.", None, 1
    )
    stsb = next(read_glue("stsb", str(shared_path("glue", "STS-B", "dev.tsv")), "dev"))
    assert (stsb.text_a, stsb.text_b, stsb.label) == (
        "A man with a hard hat is dancing.",
        "A man wearing a hard hat is dancing.",
        5.0,
    )


def test_fixture_glue_layouts():
    glue = FIXTURES / "glue"
    qqp = list(read_glue("qqp", str(glue / "QQP" / "dev.tsv"), "dev"))
    assert [e.label for e in qqp] == [0, 0, 1] and qqp[
        2
    ].text_b == "What are some reasons to travel alone?"
    qqp_test = list(read_glue("qqp", str(glue / "QQP" / "test.tsv"), "test"))
    assert qqp_test[0].label is None and qqp_test[0].guid == "0"
    mnli = list(read_glue("mnli", str(glue / "MNLI" / "train.tsv")))
    assert [e.label for e in mnli] == [2, 1] and mnli[0].text_a.startswith("Conceptually")
    matched = list(read_glue("mnli", str(glue / "MNLI" / "dev_matched.tsv"), "dev_matched"))
    assert [e.label for e in matched] == [2, 0]  # gold_label is the last of 16 columns
    mismatched = list(
        read_glue("mnli", str(glue / "MNLI" / "dev_mismatched.tsv"), "dev_mismatched")
    )
    assert mismatched[0].label == 0
    assert [e.label for e in read_glue("qnli", str(glue / "QNLI" / "dev.tsv"), "dev")] == [0, 1]
    rte = list(read_glue("rte", str(glue / "RTE" / "dev.tsv"), "dev"))
    assert [e.label for e in rte] == [1, 0] and rte[
        0
    ].text_b == "Christopher Reeve had an accident."
    assert [e.label for e in read_glue("wnli", str(glue / "WNLI" / "train.tsv"))] == [1, 1, 1, 0]


def test_malformed_rows_fail_with_file_and_line_or_are_counted(tmp_path):
    path = tmp_path / "dev.tsv"
    path.write_text(
        "index\tsentence1\tsentence2\tlabel\n0\ta\tb\tentailment\n1\tonly two\n"
        "2\ta\tb\tmaybe\n3\tc\td\tnot_entailment\n",
        encoding="utf-8",
    )
    with pytest.raises(StageError, match=r"dev.tsv:3: expected at least 4 columns"):
        list(read_glue("rte", str(path), "dev"))
    counts = {}
    examples = list(read_glue("rte", str(path), "dev", on_error="skip", counts=counts))
    assert [e.guid for e in examples] == ["0", "3"]
    assert counts == {"read": 2, "skipped_columns": 1, "skipped_label": 1}
    bad_score = tmp_path / "sts.tsv"
    bad_score.write_text("h\n" + "\t".join(["0"] * 9 + ["five"]) + "\n", encoding="utf-8")
    with pytest.raises(StageError, match=r"sts.tsv:2: score 'five' is not a number"):
        list(read_glue("stsb", str(bad_score), "dev"))


def test_squad_v1_shared_dev():
    path = str(shared_path("squad", "dev-v1.1.json"))
    counts = {}
    examples = list(read_squad(path, counts))
    assert len(examples) == 10570 and counts["impossible"] == 0 and not is_v2(path)
    assert counts.get("answer_offset_mismatch", 0) == 0
    first = examples[0]
    assert first.question == "Which NFL team represented the AFC at Super Bowl 50?"
    assert first.answers[0].text == "Denver Broncos" and first.answers[0].start == 177
    assert gold_answers(path)[first.qas_id] == ["Denver Broncos"] * 3


def test_squad_v2_fixture(tmp_path):
    data = {
        "version": "v2.0",
        "data": [
            {
                "title": "t",
                "paragraphs": [
                    {
                        "context": "Denver won in 1998.",
                        "qas": [
                            {
                                "id": "a",
                                "question": "Who won?",
                                "answers": [{"text": "Denver", "answer_start": 0}],
                                "is_impossible": False,
                            },
                            {
                                "id": "b",
                                "question": "Who lost?",
                                "answers": [],
                                "is_impossible": True,
                                "plausible_answers": [{"text": "Denver", "answer_start": 0}],
                            },
                            {
                                "id": "c",
                                "question": "When?",
                                "answers": [{"text": "1998", "answer_start": 3}],
                                "is_impossible": False,
                            },
                        ],
                    }
                ],
            }
        ],
    }
    path = tmp_path / "v2.json"
    path.write_text(json.dumps(data))
    counts = {}
    examples = list(read_squad(str(path), counts))
    assert is_v2(str(path)) and [e.is_impossible for e in examples] == [False, True, False]
    assert counts == {"questions": 3, "impossible": 1, "answer_offset_mismatch": 1}
    assert gold_answers(str(path))["b"] == []
    data["data"][0]["paragraphs"][0]["qas"][0]["answers"] = []
    path.write_text(json.dumps(data))
    with pytest.raises(StageError, match="question a has no answers"):
        list(read_squad(str(path)))
    data["data"][0]["paragraphs"][0]["qas"][0]["answers"] = [{"text": "D", "answer_start": 0}]
    del data["data"][0]["paragraphs"][0]["qas"][1]["id"]
    path.write_text(json.dumps(data))
    with pytest.raises(StageError) as error:
        list(read_squad(str(path)))
    said = "article 0 ('t'), paragraph 0, question 1 (the second): it has no \"id\" key"
    assert str(error.value) == f"{path}: {said}"


def test_race_shared_split():
    examples = list(read_race(str(shared_path("race", "RACE", "dev"))))
    levels = {e.level for e in examples}
    assert levels == {"middle", "high"} and all(len(e.options) == 4 for e in examples)
    first = next(e for e in examples if e.example_id == "middle/13-0")
    assert first.label == 0 and first.options[0] == "see its color"
    assert first.option_texts()[0] == "When something reflects light, we can   see its color  ."
    total = sum(
        len(list(read_race(str(shared_path("race", "RACE", s))))) for s in ("train", "dev", "test")
    )
    assert total == 61


def test_race_fill_and_errors(tmp_path):
    assert (
        fill_option("What's the best title of this passage?", "Color")
        == "What's the best title of this passage? Color"
    )
    (tmp_path / "middle").mkdir()
    (tmp_path / "middle" / "1.txt").write_text(
        json.dumps(
            {
                "article": "x",
                "questions": ["q"],
                "options": [["a", "b", "c", "d"]],
                "answers": ["E"],
                "id": "1.txt",
            }
        )
    )
    with pytest.raises(StageError, match=r"1.txt: question 0 has answer 'E'"):
        list(read_race(str(tmp_path)))
    with pytest.raises(StageError, match="no RACE files"):
        list(read_race(str(tmp_path / "missing")))
