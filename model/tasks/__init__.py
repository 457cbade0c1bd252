"""Fine-tuning tasks: each one object (`Task`, `model.tasks.task`) registered once in `TASKS`
(`model.tasks.registry`; the benchmark tasks: `model.tasks.benchmark_tasks`), their official
metrics, SQuAD features, and a split's encoding (`splits`), in worker processes too
(`parallel_encoding`). The readers of GLUE, SQuAD and RACE files are in `albert/` (glue_tsv,
squad_json, race_json): decontamination (pipelines/) reads the same files."""

from __future__ import annotations

from model.tasks import benchmark_tasks  # noqa: F401  (registers the benchmark tasks)
from model.tasks.registry import TASKS, get_task
from model.tasks.task import Hyperparameters, Task

__all__ = ["TASKS", "Hyperparameters", "Task", "get_task"]
