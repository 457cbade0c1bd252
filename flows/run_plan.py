"""Running a flow's plan: its steps in order, each a registered stage's Prefect task
(`flows.engine.tasks.run_stage`: banners, cross-run caching, outputs moved aside), the outcomes by
stage name; and the CPU time a run takes (`cpu_seconds`: the stages run in-process)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from prefect.tasks import Task

from albert.config import StageConfig
from flows.engine import tasks

PlanStep = tuple[Task[..., Any], str, dict[str, Any]]
"""(task, stage name, extra task arguments)."""


def run_plan(
    plan: Sequence[PlanStep], configs: dict[str, StageConfig], result_storage: Any
) -> dict[str, tasks.StageOutcome]:
    """Run the steps in order with banners and cross-run caching; the outcomes by stage name."""
    outcomes: dict[str, tasks.StageOutcome] = {}
    for index, (stage, name, kwargs) in enumerate(plan, start=1):
        outcomes[name] = tasks.run_stage(
            stage,
            configs[name],
            index=index,
            total=len(plan),
            result_storage=result_storage,
            **kwargs,
        )
    return outcomes


def cpu_seconds() -> float:
    """CPU time of this process and its finished children (the stages run in-process)."""
    times = os.times()
    return times.user + times.system + times.children_user + times.children_system
