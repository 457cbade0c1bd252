"""The pipeline flow's `--distill` step: after each `--downstream` fine-tune, a distillation whose
teacher is that fine-tune (its own Prefect task), and the report's side-by-side table."""

from __future__ import annotations

import pytest

from flows.engine import tasks
from flows.engine.tasks import StageOutcome
from flows.pipeline.config import PretrainPipelineConfig
from flows.pipeline.downstream import downstream_results, downstream_steps
from flows.report.text import distilled_table

pytestmark = pytest.mark.backend_free


def test_distill_follows_each_downstream_finetune_with_it_as_the_teacher(tmp_path):
    common = {"run_dir": str(tmp_path), "downstream": ["sst2=glue/SST-2"]}
    assert list(downstream_steps(PretrainPipelineConfig(**common))) == [
        "finetune-sst2",
        "finetune-sst2-random",
    ]  # off by default
    config = PretrainPipelineConfig(
        **common, distill={"student": "albert-nano", "alpha": 0.7}, finetune={"train_steps": 5}
    )
    steps = downstream_steps(config)
    assert list(steps)[-1] == "distill-sst2"  # after the teacher's fine-tune
    assert (steps["distill-sst2"].task, steps["distill-sst2"].role) == ("sst2", "distilled")
    step = steps["distill-sst2"].config
    assert step.teacher == config.stage_dir("finetune-sst2") and step.init == "random"
    assert (step.alpha, step.train_steps, step.output) == (0.7, 5, config.stage_dir("distill-sst2"))
    assert steps["distill-sst2"].stage_task is tasks.distill
    assert steps["finetune-sst2"].stage_task is tasks.finetune
    assert steps["finetune-sst2-random"].role == "random"
    side = {"parameters": 10, "flops_per_token": 4, "sequences_per_second": {"1": 2.0, "32": 9.0}}
    distilled = {
        "dev": {"accuracy": 0.8},
        "distillation": {
            "teacher": {**side, "dev": {"accuracy": 0.9}},
            "student": {**side, "dev": {"accuracy": 0.8}},
        },
    }
    outcomes = {
        name: StageOutcome(name, result, False, 1.0)
        for name, result in (
            ("finetune-sst2", {"dev": {"accuracy": 0.9}}),
            ("finetune-sst2-random", {"dev": {"accuracy": 0.5}}),
            ("distill-sst2", distilled),
        )
    }
    (result,) = downstream_results(steps, outcomes)
    assert result["distilled"] == distilled
    table = distilled_table([result])
    assert "| sst2 | teacher | 0.9 | 10 | 4 | 2 | 9 |" in table
    assert "| sst2 | student | 0.8 |" in table
    assert distilled_table([{k: v for k, v in result.items() if k != "distilled"}]) == ""
