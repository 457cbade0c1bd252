"""The guards of fine-tuning and distillation runs, on albert-nano and the tiny vocabulary's
SST-2: a loss that becomes non-finite stops the run with one line and exit 2 (as pretraining's
"training diverged"), and no output that looks finished is written; a damaged newest checkpoint is
moved aside and the run resumes from the one before it (none whole left: one line, exit 2)."""

from __future__ import annotations

import pytest
from test_distill_run import _values, task  # noqa: F401  (task: the module's fixture)
from test_finetune_resume import SMALL, _argv, _signal_at, spm_model, tiny_sst2  # noqa: F401

from albert.errors import EXIT_INTERRUPTED
from model import distill, finetune

pytestmark = pytest.mark.keras


def test_a_diverged_finetuning_is_one_line_exit_2_and_writes_no_output(
    spm_model,  # noqa: F811
    tmp_path,
    capsys,
):
    values = {**SMALL, "spm_model": spm_model, "task": "sst2", "learning_rate": 1e6}
    values["data_dir"] = str(tiny_sst2(tmp_path / "SST-2"))
    output = tmp_path / "run"
    capsys.readouterr()
    assert finetune.main(_argv({**values, "output": str(output)})) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()[-1:]
    assert f"{output}: training diverged: the " in line and "nothing exported" in line
    assert not output.exists()


def test_a_diverged_distillation_is_one_line_exit_2_and_writes_no_output(
    task,  # noqa: F811
    tmp_path,
    capsys,
):
    output = tmp_path / "out"
    values = _values(task, tmp_path, temperature=1e30, serving_iterations=0, output=str(output))
    capsys.readouterr()
    assert distill.main(_argv(values)) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()[-1:]
    assert f"{output}: training diverged: the " in line
    assert not output.exists()


def test_a_damaged_newest_checkpoint_is_moved_aside_and_the_run_resumes_from_the_one_before(
    spm_model,  # noqa: F811
    tmp_path,
    monkeypatch,
    capsys,
):
    values = {**SMALL, "spm_model": spm_model, "task": "sst2", "keep_checkpoints": 3}
    values["data_dir"] = str(tiny_sst2(tmp_path / "SST-2"))
    output = tmp_path / "run"
    argv = _argv({**values, "output": str(output)})
    with monkeypatch.context() as patch:
        _signal_at(patch, {"sst2": 3})
        assert finetune.main(argv) == EXIT_INTERRUPTED
    newest = tmp_path / "run.checkpoints" / "task" / "ckpt-000000003"
    (newest / "weights.npz").write_bytes((newest / "weights.npz").read_bytes()[:5000])
    capsys.readouterr()
    assert finetune.main(argv) == 0
    err = capsys.readouterr().err
    assert f"{newest}: a damaged checkpoint (weights.npz: BadZipFile" in err
    assert f"moved aside to {newest}.previous-" in err
    assert "sst2: training 4 steps, resumed at step 2" in err
    assert (output / "results.json").exists()
    (kept,) = (tmp_path / "run.checkpoints" / "task").iterdir()  # the run's own are deleted
    assert kept.name.startswith("ckpt-000000003.previous-") and (kept / "weights.npz").exists()


def test_no_whole_checkpoint_left_is_one_line_and_exit_2(spm_model, tmp_path, monkeypatch, capsys):  # noqa: F811
    values = {**SMALL, "spm_model": spm_model, "task": "sst2", "checkpoint_every": 1}
    values["data_dir"] = str(tiny_sst2(tmp_path / "SST-2"))
    output = tmp_path / "run"
    argv = _argv({**values, "output": str(output)})
    with monkeypatch.context() as patch:
        _signal_at(patch, {"sst2": 1})
        assert finetune.main(argv) == EXIT_INTERRUPTED
    (only,) = (tmp_path / "run.checkpoints" / "task").iterdir()
    (only / "state.json").write_text("{")
    capsys.readouterr()
    assert finetune.main(argv) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()[-1:]
    assert f"{only}: a damaged checkpoint (state.json: JSONDecodeError" in line
    assert "moved aside (never deleted)" in line and not output.exists()
