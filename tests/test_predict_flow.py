"""The pipeline flow's `--predict` step: after each `--downstream` fine-tune, `albert predict` of
that model on the files (its own Prefect task), and the report's table of the predictions."""

from __future__ import annotations

import pytest

from flows.engine import tasks
from flows.engine.tasks import StageOutcome
from flows.pipeline.config import PretrainPipelineConfig
from flows.pipeline.downstream import downstream_results, downstream_steps
from flows.report.text import predicted_table

pytestmark = pytest.mark.backend_free


def test_predict_follows_each_downstream_finetune_and_the_report_shows_its_labels(tmp_path):
    common = {"run_dir": str(tmp_path), "downstream": ["sst2=glue/SST-2"]}
    assert "predict-sst2" not in downstream_steps(PretrainPipelineConfig(**common))
    config = PretrainPipelineConfig(**common, predict=["new/*.csv", "more.jsonl"])
    steps = downstream_steps(config)
    assert list(steps)[-1] == "predict-sst2"  # after the fine-tune it runs
    assert (steps["predict-sst2"].task, steps["predict-sst2"].role) == ("sst2", "predicted")
    step = steps["predict-sst2"].config
    assert step.model == config.stage_dir("finetune-sst2")
    assert (step.input, step.output) == (
        ["new/*.csv", "more.jsonl"],
        config.stage_dir("predict-sst2"),
    )
    assert steps["predict-sst2"].stage_task is tasks.predict
    predicted = {
        "task": "sst2",
        "predicted": 200,
        "labels": {"0": 150, "1": 50},
        "below_confidence_bound": 20,
        "confidence_bound": 0.5,
        "rows_per_second": 812.5,
    }
    outcomes = {
        name: StageOutcome(name, result, False, 1.0)
        for name, result in (
            ("finetune-sst2", {"dev": {"accuracy": 0.9}}),
            ("finetune-sst2-random", {"dev": {"accuracy": 0.5}}),
            ("predict-sst2", predicted),
        )
    }
    (result,) = downstream_results(steps, outcomes)
    assert result["predicted"] == predicted
    table = predicted_table([result])
    assert "| sst2 | 200 | 0 75.0%, 1 25.0% | 10.0% (< 0.5) | 812 |" in table
    assert predicted_table([{k: v for k, v in result.items() if k != "predicted"}]) == ""
