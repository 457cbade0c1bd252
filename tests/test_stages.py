"""The stage registry (albert/stages.py) resolves, and the CLI and the flows' tasks read it."""

from __future__ import annotations

import pytest

from albert import cli
from albert.stages import COMMANDS, DATAFLOW_STAGES, STAGES, config_class, stage_module
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
    entry = "evaluate_pretraining" if name == "heldout" else "run"  # heldout: the task writes
    assert callable(getattr(stage_module(name), entry))
    policy = task_of(name).cache_policy
    assert (policy.input_fields, policy.modules, policy.output_marker) == (
        stage.input_fields,
        (stage.module,),
        stage.output_marker,
    )


def test_the_cli_and_the_flex_template_read_the_registry():
    assert cli.COMMANDS is COMMANDS
    assert {name for name in STAGES if STAGES[name].summary} <= set(COMMANDS)
    assert DATAFLOW_STAGES == ("segment", "vocab", "tfrecords", "predict")
