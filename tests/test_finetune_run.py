"""Small fine-tuning runs end to end (tiny vocabulary, albert-nano, a few steps) and their
scoring."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import shared_path
from test_finetune_resume import _signal_at, assert_same, resumed_run

from albert.errors import Interrupted
from albert.squad_json import gold_answers, read_squad
from flows import finetune as flow_finetune
from model import finetune
from model.evaluation import evaluate
from model.tasks.metrics import squad_v2_scores
from tests.fixtures.tasks.tiny_vocab import OBJECTS, SUBJECTS, VERBS, train_tiny_spm

pytestmark = pytest.mark.slow
FIXTURES = Path(__file__).parent / "fixtures" / "tasks"
SMALL = {
    "init": "random",
    "preset": "albert-nano",
    "max_seq_length": 32,
    "train_steps": 4,
    "eval_every": 2,
    "batch_size": 8,
    "max_train_examples": 48,
    "max_dev_examples": 24,
}


@pytest.fixture(scope="module")
def spm_model(tmp_path_factory):
    return train_tiny_spm(tmp_path_factory.mktemp("spm"))


@pytest.mark.keras  # stopped and resumed on both backends
def test_multitask_then_single_task_stsb_with_mrpc_and_a_stop_in_each_phase(
    spm_model, tmp_path, monkeypatch
):
    """Regression after a multi-task phase; stopped by SIGTERM in each phase, the resumed run ends
    as the uninterrupted one."""
    values = {
        "task": "stsb",
        "spm_model": spm_model,
        "data_dir": str(shared_path("glue", "STS-B")),
        "multitask": [f"mrpc={shared_path('glue', 'MRPC')}"],
        "multitask_steps": 2,
        **SMALL,
        "train_steps": 2,
        "eval_every": 1,
        "max_train_examples": 16,
    }
    config = finetune.FinetuneConfig(**values, output=str(tmp_path / "stsb"))
    finetune.run(config)
    results = json.loads((tmp_path / "stsb" / "results.json").read_text())
    assert results["multitask"]["tasks"] == ["mrpc", "stsb"]
    assert set(results["multitask"]["dev_after_multitask"]["mrpc"]) == {
        "f1",
        "accuracy",
        "acc_and_f1",
    }
    assert set(results["dev"]) == {"pearson", "spearman", "corr"}
    stops = [
        ({"multitask": 1}, "at step 1: saved .*resumed.checkpoints/multitask/ckpt-000000001"),
        ({"stsb": 1}, "at step 1: saved .*resumed.checkpoints/task/ckpt-000000001"),
    ]
    resumed = finetune.FinetuneConfig(**values, output=str(tmp_path / "resumed"))
    resumed_run(resumed, monkeypatch, stops)
    assert_same(tmp_path / "resumed", tmp_path / "stsb")


def test_mnli_with_sun_strategies_is_scored_on_both_dev_sets_then_evaluated(spm_model, tmp_path):
    """Sun et al.'s strategies (head+tail truncation, the last four layers' mean, layer-wise
    learning-rate decay) on a pair task; the matched dev set selects the model, the mismatched is
    scored too; model.evaluation.evaluate re-predicts with the saved model, and rescoring its
    predictions gives the same scores."""
    mnli, output = FIXTURES / "glue" / "MNLI", tmp_path / "mnli"
    config = finetune.FinetuneConfig(
        task="mnli",
        spm_model=spm_model,
        output=str(output),
        data_dir=str(mnli),
        truncation="head_tail",
        head_tokens=4,
        features="mean_last4",
        layer_decay=0.95,
        **{**SMALL, "max_seq_length": 16, "max_dev_examples": 1},
    )
    summary = finetune.run(config)
    results = json.loads((output / "results.json").read_text())
    assert results["dev"] == summary["dev"] and 0.0 <= summary["dev"]["accuracy"] <= 1.0
    assert [h["step"] for h in results["history"]] == [2, 4]
    assert results["counts"]["dev"]["read"] == 2  # of which max_dev_examples=1 are scored
    lines = (output / "predictions.tsv").read_text().splitlines()
    assert lines[0] == "index\tprediction" and len(lines) == 2
    assert (
        set(results["dev_sets"]) == {"MNLI-m", "MNLI-mm"}
        and summary["dev_sets"] == results["dev_sets"]
    )
    assert results["dev_sets"]["MNLI-m"] == results["dev"]  # the matched set selects the model
    gold = str(mnli / "dev_mismatched.tsv")
    mismatched = evaluate.run(
        evaluate.EvaluateConfig(
            task="mnli", gold=gold, model=str(output), output=str(tmp_path / "eval-mm")
        )
    )
    assert mismatched["scores"]["accuracy"] == pytest.approx(
        results["dev_sets"]["MNLI-mm"]["accuracy"]
    )
    rescored = evaluate.run(
        evaluate.EvaluateConfig(task="mnli", gold=gold, predictions=mismatched["predictions"])
    )
    assert rescored["scores"] == mismatched["scores"]


def squad_v2_fixture(path, questions=40):
    """v2-format articles from the tiny corpus's vocabulary: answerable and unanswerable
    questions."""
    articles = []
    for index in range(questions):
        subject, verb, obj = (
            SUBJECTS[index % len(SUBJECTS)],
            VERBS[index % len(VERBS)],
            OBJECTS[index % len(OBJECTS)],
        )
        context = f"{subject.capitalize()} {verb} {obj}. The children played the game again."
        impossible = index % 4 == 3
        qa = {
            "id": f"q{index}",
            "question": f"What does {subject} {verb}?",
            "is_impossible": impossible,
            "answers": [] if impossible else [{"text": obj, "answer_start": context.index(obj)}],
        }
        articles.append(
            {"title": f"article{index}", "paragraphs": [{"context": context, "qas": [qa]}]}
        )
    path.write_text(json.dumps({"version": "v2.0", "data": articles}))
    return str(path)


@pytest.mark.keras  # stopped and resumed on both backends
def test_squad2_threshold_tuned_on_training_holdout(spm_model, tmp_path, monkeypatch):
    data = squad_v2_fixture(tmp_path / "v2.json")
    config = finetune.FinetuneConfig(
        task="squad2",
        spm_model=spm_model,
        output=str(tmp_path / "sq"),
        data_dir=str(tmp_path),
        train_file=data,
        dev_file=data,
        init="random",
        preset="albert-nano",
        max_seq_length=48,
        max_query_length=12,
        doc_stride=16,
        train_steps=4,
        eval_every=4,
        batch_size=8,
        threshold_holdout=0.3,
    )
    summary = finetune.run(config)
    dev = summary["dev"]
    assert {
        "HasAns_f1",
        "NoAns_f1",
        "best_f1",
        "best_f1_thresh",
        "threshold_tuned_on_train_holdout",
    } <= set(dev)
    results = json.loads((tmp_path / "sq" / "results.json").read_text())
    held = results["counts"]["holdout"]["examples"]
    assert 0 < held < 40 and results["counts"]["train"]["examples"] == 40 - held
    predictions = json.loads((tmp_path / "sq" / "predictions.json").read_text())
    assert set(predictions) == {e.qas_id for e in read_squad(data)}
    files = {
        "task": "squad2",
        "gold": data,
        "predictions": str(tmp_path / "sq" / "predictions.json"),
        "na_probs": str(tmp_path / "sq" / "null_odds.json"),
    }
    tuned = dev["threshold_tuned_on_train_holdout"]
    scored = evaluate.run(evaluate.EvaluateConfig(**files, threshold=tuned))
    assert scored["scores"]["best_f1"] == pytest.approx(dev["best_f1"])
    assert scored["scores"]["f1"] == pytest.approx(dev["f1"])  # thresholded answers, no second cut
    official = evaluate.run(evaluate.EvaluateConfig(**files))  # no --threshold: the official 1.0
    null_odds = json.loads((tmp_path / "sq" / "null_odds.json").read_text())
    expected = squad_v2_scores(gold_answers(data), predictions, null_odds, threshold=1.0)
    coverage = {"predicted": 40, "missing_predictions": 0, "unknown_predictions": 0}
    assert official["scores"] == pytest.approx({**expected, **coverage})
    # stopped by SIGTERM at step 3, the resumed run ends as the uninterrupted one
    resumed = config.model_copy(update={"output": str(tmp_path / "resumed")})
    resumed_run(resumed, monkeypatch, [({"squad2": 3}, "at step 3: saved")])
    assert_same(tmp_path / "resumed", tmp_path / "sq")


@pytest.mark.keras  # stopped and resumed on both backends
def test_race_end_to_end(spm_model, tmp_path, monkeypatch):
    config = finetune.FinetuneConfig(
        task="race",
        spm_model=spm_model,
        output=str(tmp_path / "race"),
        data_dir=str(shared_path("race", "RACE")),
        init="random",
        preset="albert-nano",
        max_seq_length=48,
        train_steps=3,
        eval_every=2,
        batch_size=4,
    )
    summary = finetune.run(config)
    assert {"accuracy", "accuracy_middle", "accuracy_high"} <= set(summary["dev"])
    scored = evaluate.run(
        evaluate.EvaluateConfig(
            task="race",
            gold=str(shared_path("race", "RACE", "dev")),
            predictions=str(tmp_path / "race" / "predictions.jsonl"),
        )
    )
    assert scored["scores"]["accuracy"] == pytest.approx(summary["dev"]["accuracy"])
    # stopped by SIGTERM at step 1, the resumed run ends as the uninterrupted one
    resumed = config.model_copy(update={"output": str(tmp_path / "resumed")})
    resumed_run(resumed, monkeypatch, [({"race": 1}, "at step 1: saved")])
    assert_same(tmp_path / "resumed", tmp_path / "race")


def test_cli_errors_are_clean(spm_model, tmp_path, capsys):
    code = finetune.main(
        [
            "--task",
            "nope",
            "--init",
            "random",
            "--spm-model",
            spm_model,
            "--data-dir",
            ".",
            "--output",
            str(tmp_path / "x"),
        ]
    )
    assert code == 2 and not (tmp_path / "x").exists()
    code = finetune.main(
        [
            "--task",
            "sst2",
            "--init",
            str(tmp_path / "missing.keras"),
            "--spm-model",
            spm_model,
            "--data-dir",
            str(shared_path("glue", "SST-2")),
            "--output",
            str(tmp_path / "y"),
            "--max-train-examples",
            "4",
            "--max-seq-length",
            "16",
        ]
    )
    assert code == 2 and not (tmp_path / "y").exists()


@pytest.mark.keras  # stopped and resumed on both backends
def test_further_pretraining_on_task_text_then_finetune(spm_model, tmp_path, monkeypatch):
    """Stopped by SIGTERM in the fine-tuning after further pretraining, the re-run resumes the
    fine-tuning from its checkpoint: the further pretraining stands (it is not run again)."""
    config = finetune.FinetuneConfig(
        task="cola",
        spm_model=spm_model,
        output=str(tmp_path / "cola"),
        data_dir=str(shared_path("glue", "CoLA")),
        further_pretrain_steps=2,
        **{**SMALL, "train_steps": 2, "max_train_examples": 16, "max_dev_examples": 8},
    )
    with monkeypatch.context() as patch, pytest.raises(Interrupted, match="at step 1: saved"):
        _signal_at(patch, {"cola": 1})
        flow_finetune.run(config)  # albert finetune: further pretraining is a flow step
    monkeypatch.setattr(flow_finetune, "further_pretrain", lambda *_: pytest.fail("ran again"))
    flow_finetune.run(config)
    results = json.loads((tmp_path / "cola" / "results.json").read_text())
    further = results["further_pretraining"]
    assert (
        further["documents"] == 16
        and further["steps"] == 2
        and further["init"].endswith("model.keras")
    )
    corpus = (tmp_path / "cola.further" / "corpus" / "task.txt").read_text()
    assert corpus.startswith(  # a sentence over 2 x the length's characters is cut at a space
        "Our friends won't buy this analysis, let alone the next one we\npropose.\n\n"
    )
    assert set(results["dev"]) == {"mcc", "accuracy"}
