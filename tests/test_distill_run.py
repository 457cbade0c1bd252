"""`albert distill` end to end on a tiny task (albert-nano teacher and student, the tiny
vocabulary's SST-2, seq 32, 3 steps), on both backends: the run writes what `albert finetune`
writes and the side-by-side report; stopped by SIGTERM at step 2 it exits 75 and the same command
resumes it to the uninterrupted run's weights, metrics and predictions, reading the teacher's
outputs from the cache the first run wrote (with TinyBERT's intermediate losses on: the teacher's
model runs at every step); a teacher of another task or another vocabulary is
one line and exit 2. The soft-target loss is Hinton's T^2 * KL."""

from __future__ import annotations

import json

import numpy as np
import pytest
from test_finetune_resume import _argv, _outcome, _signal_at, tiny_sst2

from albert.errors import EXIT_INTERRUPTED
from model import distill
from tests.fixtures.tasks.tiny_vocab import train_tiny_spm

pytestmark = pytest.mark.keras
SMALL = {
    "task": "sst2",
    "student": "albert-nano",
    "max_seq_length": 32,
    "train_steps": 3,
    "eval_every": 3,
    "checkpoint_every": 1,
    "batch_size": 8,
    "max_train_examples": 24,
    "max_dev_examples": 8,
}


@pytest.fixture(scope="module")
def task(tmp_path_factory):
    """(spm model, SST-2 dir, teacher dir): the teacher an albert-nano fine-tuning output, its
    weights untrained (what distillation reads of it is its model and results.json)."""
    from albert.tokenization import AlbertTokenizer
    from model.finetune.models import FinetuneModel
    from model.network.backbone import AlbertBackbone
    from model.network.config import get_preset

    root = tmp_path_factory.mktemp("distill")
    spm = train_tiny_spm(root)
    teacher = root / "teacher"
    teacher.mkdir()
    config = get_preset("albert-nano", vocab_size=AlbertTokenizer(spm).vocab_size)
    model = FinetuneModel(AlbertBackbone(config), "classification", 2, name="finetune")
    model.build()
    model.save(teacher / "model.keras")
    results = {"task": "sst2", "dev": {"accuracy": 0.5}, "config": {"spm_model": spm}}
    (teacher / "results.json").write_text(json.dumps(results))
    return spm, tiny_sst2(root / "SST-2", train=24, dev=8), teacher


def _values(task, tmp_path, **more) -> dict:
    spm, data, teacher = task
    cache = str(tmp_path / "cache")
    return {
        **SMALL,
        "spm_model": spm,
        "data_dir": str(data),
        "teacher": str(teacher),
        "teacher_cache": cache,
        **more,
    }


def test_distills_then_a_sigterm_exits_75_and_the_same_command_resumes_exactly(
    task, tmp_path, monkeypatch, capsys
):
    values = _values(task, tmp_path, serving_iterations=1, hidden_weight=1.0, attention_weight=0.5)
    uninterrupted, output = tmp_path / "uninterrupted", tmp_path / "run"
    summary = distill.run(distill.DistillConfig(**values, output=str(uninterrupted)))
    assert summary["task"] == "sst2" and "accuracy" in summary["dev"]
    assert {p.name for p in uninterrupted.iterdir()} == {
        "results.json",
        "predictions.tsv",
        "model.keras",
        "distillation.md",
        "export",  # export/saved_model (serving), export/hf, export/keras_hub
    }
    report = (uninterrupted / "distillation.md").read_text()
    assert "| teacher | 0.5000 |" in report and "sequences/s at batch 32" in report
    results = json.loads((uninterrupted / "results.json").read_text())
    costs = results["distillation"]
    assert costs["student"]["parameters"] == costs["teacher"]["parameters"] > 0
    assert set(costs["student"]["sequences_per_second"]) == {"1", "32"}
    (cache,) = (tmp_path / "cache").iterdir()  # one key: the teacher's and the data's
    written = {p.name: p.stat().st_mtime_ns for p in cache.iterdir()}
    argv = _argv({**values, "serving_iterations": 0, "output": str(output)})
    with monkeypatch.context() as patch:
        _signal_at(patch, {"sst2": 2})
        assert distill.main(argv) == EXIT_INTERRUPTED
    assert "SIGTERM at step 2: saved" in capsys.readouterr().err
    assert distill.main(argv) == 0
    assert {p.name: p.stat().st_mtime_ns for p in cache.iterdir()} == written  # read, not redone
    resumed, resumed_files, resumed_weights = _outcome(output)
    expected, expected_files, expected_weights = _outcome(uninterrupted)
    for facts in (resumed, expected):  # the measured speeds and the settings of the report
        facts.pop("identity")
        for name in ("teacher", "student"):
            facts["distillation"][name].pop("sequences_per_second")
    assert resumed == expected and resumed_files == expected_files
    assert all(np.array_equal(a, b) for a, b in zip(resumed_weights, expected_weights))
    assert not (tmp_path / "run.checkpoints").exists()


def test_a_teacher_of_another_task_or_vocabulary_is_one_line_and_exit_2(task, tmp_path, capsys):
    spm, _, teacher = task
    other = tmp_path / "other"
    other.mkdir()
    (other / "model.keras").write_bytes((teacher / "model.keras").read_bytes())
    (tmp_path / "other.model").write_bytes(b"another vocabulary")
    cases = [
        ({"task": "mrpc", "config": {"spm_model": spm}}, f"--teacher {other}: fine-tuned on mrpc"),
        (
            {"task": "sst2", "config": {"spm_model": str(tmp_path / "other.model")}},
            f"--spm-model {spm}: the student's vocabulary differs from the teacher's",
        ),
    ]
    for results, message in cases:
        (other / "results.json").write_text(json.dumps(results))
        values = _values(task, tmp_path, teacher=str(other), output=str(tmp_path / "out"))
        capsys.readouterr()
        assert distill.main(_argv(values)) == 2
        (line,) = capsys.readouterr().err.strip().splitlines()
        assert message in line
    values = _values(task, tmp_path, teacher=str(tmp_path), output=str(tmp_path / "out"))
    assert distill.main(_argv(values)) == 2
    assert "not an `albert finetune` output" in capsys.readouterr().err


def test_soft_targets_are_t_squared_kl_and_squad_logits_are_cut_to_the_batch():
    import keras

    from model.distill.losses import CachedTeacher
    from model.finetune.kinds import task_kind

    teacher, student, t = np.array([[2.0, 0.0, -1.0]]), np.array([[0.5, 0.0, 0.0]]), 2.0
    p, q = (np.exp(x / t) / np.exp(x / t).sum() for x in (teacher, student))
    expected = t**2 * float((p * np.log(p / q)).sum())
    loss = task_kind("sst2").soft_target_loss(t).compute_loss(teacher, student)
    assert float(keras.ops.convert_to_numpy(loss)) == pytest.approx(expected, rel=1e-5)
    cached = {"start_logits": np.zeros((2, 8)), "end_logits": np.ones((2, 8))}
    cut = CachedTeacher(True)({"teacher": cached, "input_ids": np.zeros((2, 5), "int32")})
    assert {name: tuple(v.shape) for name, v in cut.items()} == {
        "start_logits": (2, 5),
        "end_logits": (2, 5),
    }


def test_a_teacher_without_a_task_head_is_refused_before_its_outputs_are_computed(
    task, tmp_path, capsys
):
    """A pretrained model beside a fine-tuning's results.json: one line, exit 2, no cache."""
    from albert.tokenization import AlbertTokenizer
    from model.network.config import get_preset
    from model.network.pretraining_model import AlbertPretrainingModel

    spm, _, teacher = task
    forged = tmp_path / "forged"
    forged.mkdir()
    (forged / "results.json").write_text((teacher / "results.json").read_text())
    vocab_size = AlbertTokenizer(spm).vocab_size
    model = AlbertPretrainingModel(get_preset("albert-nano", vocab_size=vocab_size))
    ids = np.zeros((1, 8), "int32")
    model({"input_ids": ids, "segment_ids": ids, "input_mask": ids + 1})
    model.save(forged / "model.keras")
    values = _values(task, tmp_path, teacher=str(forged), output=str(tmp_path / "out"))
    capsys.readouterr()
    assert distill.main(_argv(values)) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()[-1:]
    assert f"--teacher {forged}: its model.keras has no task head" in line
    assert "\x1b" not in line
    assert not (tmp_path / "cache").exists() and not (tmp_path / "out").exists()


def test_a_student_larger_than_its_teacher_is_named_and_a_bad_one_costs_no_teacher_pass(
    task, tmp_path, capsys
):
    """Both are found before the teacher's outputs are computed: the larger student (albert-tiny
    under an albert-nano teacher) with a warning, the unloadable one (a Lambda layer) with one
    line and exit 2."""
    import keras

    lambda_model = keras.Sequential([keras.Input((4,)), keras.layers.Lambda(lambda x: x * 2)])
    lambda_model.save(tmp_path / "lambda.keras")
    values = _values(task, tmp_path, student=str(tmp_path / "lambda.keras"))
    capsys.readouterr()
    assert distill.main(_argv({**values, "output": str(tmp_path / "out")})) == 2
    assert "Lambda" in capsys.readouterr().err.strip().splitlines()[-1]
    assert not (tmp_path / "cache").exists() and not (tmp_path / "out").exists()
    larger = {**values, "student": "albert-tiny", "train_steps": 1, "serving_iterations": 0}
    assert distill.main(_argv({**larger, "output": str(tmp_path / "out")})) == 0
    err = capsys.readouterr().err
    assert "the student (--student albert-tiny) has " in err and "more than the teacher's" in err
