"""Fine-tuning and scoring refuse empty data up front; partial SQuAD predictions are reported as
such."""

from __future__ import annotations

import json

import pytest
from conftest import shared_path

from albert.errors import StageError
from albert.glue_tsv import read_glue
from model import finetune
from model.evaluation import evaluate
from tests.fixtures.tasks.tiny_vocab import train_tiny_spm

SST2_ROWS = "sentence\tlabel\n" + "a fine film\t1\na dull film\t0\n" * 4


@pytest.fixture(scope="module")
def spm_model(tmp_path_factory):
    return train_tiny_spm(tmp_path_factory.mktemp("spm"))


def error_line(capsys) -> str:
    [line] = [line for line in capsys.readouterr().err.splitlines() if " failed: " in line]
    return line.split(" failed: ", 1)[1]


@pytest.mark.parametrize(
    "dev_text, why",
    [
        ("", "the file is empty or has only a header"),
        ("sentence\tlabel\n", "the file is empty or has only a header"),
        ("sentence\tlabel\nno label here\n", "all 1 rows were malformed and skipped"),
    ],
)
def test_finetune_with_an_empty_dev_file_fails_before_training(
    spm_model, tmp_path, capsys, dev_text, why
):
    (tmp_path / "train.tsv").write_text(SST2_ROWS)
    (tmp_path / "dev.tsv").write_text(dev_text)
    code = finetune.main(
        [
            "--task",
            "sst2",
            "--init",
            "random",
            "--preset",
            "albert-nano",
            "--spm-model",
            spm_model,
            "--data-dir",
            str(tmp_path),
            "--output",
            str(tmp_path / "out"),
            "--max-seq-length",
            "16",
            "--train-steps",
            "2",
            "--batch-size",
            "4",
            "--on-error",
            "skip",
        ]
    )
    assert code == 2 and not (tmp_path / "out").exists()
    assert error_line(capsys) == f"{tmp_path / 'dev.tsv'}: no dev examples ({why})"


def test_finetune_with_a_header_only_train_file_fails_before_training(spm_model, tmp_path, capsys):
    (tmp_path / "train.tsv").write_text("sentence\tlabel\n")
    (tmp_path / "dev.tsv").write_text(SST2_ROWS)
    code = finetune.main(
        [
            "--task",
            "sst2",
            "--init",
            "random",
            "--spm-model",
            spm_model,
            "--data-dir",
            str(tmp_path),
            "--output",
            str(tmp_path / "out"),
        ]
    )
    assert code == 2
    assert (
        error_line(capsys)
        == f"{tmp_path / 'train.tsv'}: no train examples (the file is empty or has only a header)"
    )


def test_scoring_an_empty_gold_file_is_an_error(tmp_path):
    gold, predictions = tmp_path / "dev.tsv", tmp_path / "predictions.tsv"
    predictions.write_text("index\tprediction\n")
    for text in ("", "sentence\tlabel\n"):
        gold.write_text(text)
        with pytest.raises(StageError, match=rf"^{gold}: no examples to score"):
            evaluate.run(
                evaluate.EvaluateConfig(task="sst2", gold=str(gold), predictions=str(predictions))
            )
    squad = tmp_path / "squad.json"
    squad.write_text(json.dumps({"version": "1.1", "data": []}))
    (tmp_path / "p.json").write_text("{}")
    with pytest.raises(StageError, match=rf"^{squad}: no questions to score"):
        evaluate.run(
            evaluate.EvaluateConfig(
                task="squad1", gold=str(squad), predictions=str(tmp_path / "p.json")
            )
        )


def test_partial_squad_predictions_are_reported(tmp_path, caplog):
    gold = shared_path("squad", "dev-v1.1.json")
    data = json.loads(gold.read_text())
    ids = [qa["id"] for article in data["data"] for p in article["paragraphs"] for qa in p["qas"]]
    answers = {
        qa["id"]: qa["answers"][0]["text"]
        for a in data["data"]
        for p in a["paragraphs"]
        for qa in p["qas"]
    }
    predictions = tmp_path / "predictions.json"
    predictions.write_text(json.dumps({qid: answers[qid] for qid in ids[:100]}))
    with caplog.at_level("WARNING", logger="model.evaluation.evaluate"):
        result = evaluate.run(
            evaluate.EvaluateConfig(task="squad1", gold=str(gold), predictions=str(predictions))
        )
    scores = result["scores"]
    assert (scores["predicted"], scores["missing_predictions"], scores["total"]) == (
        100,
        10470,
        10570,
    )
    assert scores["exact_match"] == pytest.approx(100 * 100 / 10570)
    assert f"{predictions}: PARTIAL predictions: 10470 of 10570 questions have none" in caplog.text
    predictions.write_text(json.dumps({"not-a-question": "x"}))
    with pytest.raises(
        StageError, match=rf"^{predictions}: none of the 10570 gold questions has a prediction"
    ):
        evaluate.run(
            evaluate.EvaluateConfig(task="squad1", gold=str(gold), predictions=str(predictions))
        )


def test_predictions_for_ids_not_in_the_gold_file_are_counted_and_named(tmp_path, caplog):
    gold, predictions = tmp_path / "dev.tsv", tmp_path / "predictions.tsv"
    gold.write_text(SST2_ROWS)
    rows = [f"{e.guid}\t{e.label}\n" for e in read_glue("sst2", str(gold), "dev")]
    predictions.write_text("index\tprediction\n" + "".join(rows) + "900\t0\n901\t1\n")
    config = evaluate.EvaluateConfig(task="sst2", gold=str(gold), predictions=str(predictions))
    with caplog.at_level("WARNING", logger="model.evaluation.evaluate"):
        scores = evaluate.run(config)["scores"]
    assert scores["unknown_predictions"] == 2 and scores["accuracy"] == 1.0
    assert (
        f"{predictions}: 2 of 10 predictions have an id that is not in {gold} (e.g. '900'); "
        "not scored"
    ) in caplog.text

    squad, answers = tmp_path / "squad.json", tmp_path / "answers.json"
    answer = {"text": "The cat", "answer_start": 0}
    paragraph = {
        "context": "The cat sat.",
        "qas": [{"id": "q1", "question": "Who sat?", "answers": [answer]}],
    }
    article = {"title": "t", "paragraphs": [paragraph]}
    squad.write_text(json.dumps({"version": "1.1", "data": [article]}))
    answers.write_text(json.dumps({"q1": "The cat", "q-from-another-file": "x"}))
    caplog.clear()
    config = evaluate.EvaluateConfig(task="squad1", gold=str(squad), predictions=str(answers))
    with caplog.at_level("WARNING", logger="model.evaluation.evaluate"):
        scores = evaluate.run(config)["scores"]
    assert (scores["unknown_predictions"], scores["exact_match"]) == (1, 100.0)
    assert f"{answers}: 1 of 2 predictions have an id that is not in {squad}" in caplog.text
