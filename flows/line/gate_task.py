"""The promotion gate's task side, with `--gate-task TASK=DIR`: the parent's and the candidate's
fine-tunes on the team's task (their configs), each side's scores for the gate, the gate's task
and metric, and what version.json records of them. The decision itself is flows.line.gate's."""

from __future__ import annotations

from typing import Any

from albert.config import build_config
from flows.line.config import LineConfig
from flows.line.gate import Decision, TaskGate


def gate_configs(
    config: LineConfig, run: LineConfig, spm: str, models: dict[str, str]
) -> dict[str, Any]:
    """With `--gate-task TASK=DIR`, the fine-tune of each of `models` (side -> its export) on that
    task, `gate-SIDE` in the night's work directory: the same `--gate-finetune` settings and
    seed; {} without."""
    if config.gate_task is None:
        return {}
    from model.finetune import FinetuneConfig, parse_task_dir  # heavy: loads TensorFlow

    task, data_dir = parse_task_dir(config.gate_task, "--gate-task")
    common = {"task": task, "data_dir": data_dir, "spm_model": spm, "seed": config.seed}
    return {
        f"gate-{side}": build_config(
            FinetuneConfig,
            {
                **common,
                **config.gate_finetune,
                "init": model,
                "output": run.stage_dir(f"gate-{side}"),
            },
        )
        for side, model in models.items()
    }


def night_scores(outcomes: dict, side: str) -> dict[str, Any]:
    """The scores of one side (`candidate`, `parent`): its held-out metrics ("domain",
    "general") and, with a gate task, its fine-tune's dev metrics ("task")."""
    scores = {k: outcomes[f"{side}-{k}"].result for k in ("domain", "general")}
    fine_tune = outcomes.get(f"gate-{side}")
    return scores | ({"task": fine_tune.result.get("dev", {})} if fine_tune else {})


def task_gate(config: LineConfig, outcomes: dict) -> TaskGate | None:
    """The gate's task, its metric by default the task's primary one (the candidate's
    results.json); None without `--gate-task`."""
    fine_tune = outcomes.get("gate-candidate")
    return config.task_gate(fine_tune.result.get("primary_metric") or "") if fine_tune else None


def gate_task_record(config: LineConfig, outcomes: dict, decision: Decision) -> dict[str, Any]:
    """The gate task's part of version.json's `gate`: the task, its metric, the tolerance and the
    change; {} without one."""
    gate = task_gate(config, outcomes)
    if gate is None:
        return {}
    return {
        "task": gate.task,
        "task_metric": gate.metric,
        "task_tolerance": gate.tolerance,
        "task_change": decision.task_change,
    }
