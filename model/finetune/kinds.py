"""The task-kind lookup: a task's name -> its `TaskKind` (GLUE, SQuAD or RACE)."""

from __future__ import annotations

from albert.errors import StageError
from model.finetune.glue import GlueKind, GlueRegressionKind
from model.finetune.kind import TaskKind
from model.finetune.race import RaceKind
from model.finetune.squad import SquadKind
from model.tasks import get_task

KINDS: dict[str, type[TaskKind]] = {
    "classification": GlueKind,
    "regression": GlueRegressionKind,
    "span": SquadKind,
    "multiple_choice": RaceKind,
}


def task_kind(task: str) -> TaskKind:
    """The kind of the task named `task` (any alias `model.tasks.get_task` knows); an unknown task
    is a StageError listing the known ones."""
    try:
        spec = get_task(task)
    except KeyError as error:
        raise StageError(str(error.args[0])) from None
    return KINDS[spec.kind](spec)
