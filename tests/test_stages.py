"""The stage registry (albert/stages.py) resolves, and the CLI and the flows' tasks read it."""

from __future__ import annotations

import pytest

from albert import cli
from albert.stages import DATAFLOW_STAGES, STAGES, config_class, stage_module
from flows.engine import tasks


def task_of(name: str):
    """The Prefect task of stage `name`: the model line's replay is the line's own."""
    if name == "replay":
        from flows.line import night

        return night.replay
    return getattr(tasks, {"select": "domain_select"}.get(name, name))


@pytest.mark.parametrize("name", STAGES)
def test_each_stage_names_its_module_config_and_input_fields(name):
    stage = STAGES[name]
    fields = config_class(name).model_fields
    assert set(stage.input_fields) <= set(fields) and "output" in fields
    entry = "run_pipeline" if name == "predict" else "run"  # predict: albert predict runs it
    assert callable(getattr(stage_module(name), entry))
    assert stage.module.split(".")[0] in {"pipelines", "model"}  # the flows wrap stages
    policy = task_of(name).cache_policy
    wrappers = (cli.WRAPPED_STAGES[name],) if name in cli.WRAPPED_STAGES else ()
    assert (policy.input_fields, policy.modules, policy.output_marker) == (
        stage.input_fields,
        (stage.module, *wrappers),
        stage.output_marker,
    )


def test_the_cli_and_the_flex_template_read_the_registry():
    assert {name for name in STAGES if STAGES[name].summary} <= set(cli.COMMANDS)
    assert cli.COMMANDS["segment"][0] == STAGES["segment"].module
    assert cli.COMMANDS["finetune"][0] == "flows.finetune"  # further pretraining: two layers
    assert DATAFLOW_STAGES == ("segment", "vocab", "tfrecords", "predict")
