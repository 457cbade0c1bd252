"""The guards of fine-tuning and distillation runs, on albert-nano and the tiny vocabulary's
SST-2: a loss that becomes non-finite stops the run with one line and exit 2 (as pretraining's
"training diverged"), and no output that looks finished is written."""

from __future__ import annotations

import pytest
from test_distill_run import _values, task  # noqa: F401  (task: the module's fixture)
from test_finetune_resume import SMALL, _argv, spm_model, tiny_sst2  # noqa: F401

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
