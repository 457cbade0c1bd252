"""The fine-tuning package's contracts: one task kind per task, looked up once; the one `TASK=DIR`
parser (`--multitask`, `--downstream`); `MultiTaskModel` survives a `.keras` save and load; the
command line checks its config before Keras loads."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import keras
import numpy as np
import pytest
from model_testdata import padded_inputs

from albert.config import ConfigError
from albert.errors import StageError
from model import finetune
from model.finetune import MultiTaskModel, parse_task_dir
from model.finetune.glue import GlueKind, GlueRegressionKind
from model.finetune.kinds import task_kind
from model.finetune.race import RaceKind
from model.finetune.squad import SquadKind
from model.network.backbone import AlbertBackbone
from model.network.config import get_preset

ROOT = Path(__file__).resolve().parents[1]


def test_each_task_has_one_kind_and_unknown_tasks_are_named():
    kinds = {name: type(task_kind(name)) for name in ("sst2", "stsb", "mnli-m", "squad2", "race")}
    assert kinds == {
        "sst2": GlueKind,
        "stsb": GlueRegressionKind,
        "mnli-m": GlueKind,
        "squad2": SquadKind,
        "race": RaceKind,
    }
    assert task_kind("squad").spec.name == "squad1" and task_kind("mnli").null_odds_file is None
    with pytest.raises(StageError, match="unknown task 'nope'; known: cola"):
        task_kind("nope")


def test_what_differs_between_tasks_is_their_registration_and_kind():
    """No name or kind string is compared outside the task definitions: unanswerable questions,
    a pair's second text and the option letters are the registrations'; each kind supplies its
    head, and the predictions of every kind are in one table."""
    from model.network.heads import MultipleChoiceHead, SpanExtractionHead
    from model.predict.kinds import PREDICT_KINDS
    from model.tasks import TASKS, get_task

    assert [name for name in TASKS.names() if get_task(name).unanswerable] == ["squad2"]
    assert task_kind("squad2").v2 and not task_kind("squad1").v2
    assert (get_task("mrpc").texts, get_task("sst2").texts, get_task("race").labels) == (
        2,
        1,
        ("A", "B", "C", "D"),
    )
    assert {get_task(name).kind for name in TASKS.names()} | {"multi_label"} == set(PREDICT_KINDS)
    backbone = AlbertBackbone(get_preset("albert-nano", vocab_size=64))
    heads = {
        kind: type(finetune.FinetuneModel(backbone, kind, 4).head)
        for kind in ("span", "multiple_choice")
    }
    assert heads == {"span": SpanExtractionHead, "multiple_choice": MultipleChoiceHead}


def test_task_dir_parser_names_the_option_and_the_bad_item():
    assert parse_task_dir("stsb=glue/STS-B", "--multitask") == ("stsb", "glue/STS-B")
    assert parse_task_dir("SST-2=a=b", "--downstream") == ("SST-2", "a=b")
    for item in ("stsb", "=glue/STS-B", "stsb="):
        with pytest.raises(ConfigError, match=rf"^--downstream '{item}': expected TASK=DIR"):
            parse_task_dir(item, "--downstream")
    with pytest.raises(ConfigError, match=r"^--multitask 'nope=d': unknown task 'nope'"):
        parse_task_dir("nope=d", "--multitask")


@pytest.mark.keras
def test_multitask_model_round_trips_through_a_keras_file(tmp_path):
    keras.utils.set_random_seed(0)
    backbone = AlbertBackbone(get_preset("albert-nano", vocab_size=50), name="albert")
    model = MultiTaskModel(backbone, {"mrpc": 2, "stsb": 1}, "mean_last4", 0.1, name="multitask")
    inputs = padded_inputs(50, 8)
    expected = model(inputs)
    config = model.get_config()
    assert (config["tasks"], config["features"], config["dropout"]) == (
        {"mrpc": 2, "stsb": 1},
        "mean_last4",
        0.1,
    )
    model.save(tmp_path / "multitask.keras")
    loaded = keras.saving.load_model(tmp_path / "multitask.keras", compile=False)
    assert isinstance(loaded, MultiTaskModel) and loaded.tasks == {"mrpc": 2, "stsb": 1}
    outputs = loaded(inputs)
    for task in ("mrpc", "stsb"):
        assert np.allclose(
            keras.ops.convert_to_numpy(outputs[task]),
            keras.ops.convert_to_numpy(expected[task]),
            atol=1e-6,
        )


def test_further_pretraining_outside_the_flows_is_refused_in_one_line(tmp_path, capsys):
    """`--further-pretrain-steps` chains the tfrecords and pretrain stages: `albert finetune`
    (flows.finetune) runs it; `python -m model.finetune` says so before any work."""
    argv = ["--task", "sst2", "--init", "random", "--spm-model", "s.model", "--data-dir", "d"]
    argv += ["--output", str(tmp_path / "out"), "--further-pretrain-steps", "2"]
    assert finetune.main(argv) == 2
    assert "use `albert finetune`" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_further_pretraining_corpus_holds_a_long_text_in_sentences(tmp_path):
    """A text on one line (a lowercased news article, which BlingFire does not split) is written
    as a document of pieces cut at spaces, each within the given characters, none dropped."""
    from flows.finetune import task_corpus  # Beam's text tools: only this test needs them

    article = " ".join(f"word{i}" for i in range(60))
    path = tmp_path / "task.txt"
    assert task_corpus([[article], ["Short one. Another one.", None], [" "]], str(path), 100) == 2
    first, second, _ = path.read_text().split("\n\n")
    assert all(len(line) <= 100 for line in first.split("\n")) and len(first.split("\n")) == 5
    assert first.replace("\n", " ") == article
    assert second == "Short one.\nAnother one."


@pytest.mark.parametrize("module", ["model.finetune", "flows.finetune"])
def test_a_bad_config_fails_before_keras_is_imported(tmp_path, module):
    """`python -m model.finetune` and `albert finetune` (flows.finetune) check their config first:
    a bad task costs no Keras or backend start-up (the imports `-X importtime` lists)."""
    argv = ["--task", "nope", "--init", "random", "--spm-model", "s.model", "--data-dir", "d"]
    result = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", module, *argv, "--output", "o"],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 2 and "unknown task 'nope'" in result.stderr
    imported = {line.rsplit("|", 1)[-1].strip() for line in result.stderr.splitlines()}
    assert not imported & {"keras", "tensorflow", "jax", "torch"}
    assert not (tmp_path / "o").exists()
