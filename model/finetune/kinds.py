"""The task-kind lookup: a task (or a registered task's name) -> its `TaskKind`, the head and loss
of its `Task.kind`."""

from __future__ import annotations

from albert.errors import StageError
from model.finetune.glue import GlueKind, GlueRegressionKind
from model.finetune.kind import TaskKind
from model.finetune.multi_label import MultiLabelKind
from model.finetune.race import RaceKind
from model.finetune.squad import SquadKind
from model.tasks import Task, get_task

KINDS: dict[str, type[TaskKind]] = {
    "classification": GlueKind,
    "multi_label": MultiLabelKind,
    "regression": GlueRegressionKind,
    "span": SquadKind,
    "multiple_choice": RaceKind,
}


def task_kind(task: str | Task) -> TaskKind:
    """The kind of `task`, or of the registered task it names (any alias `model.tasks.get_task`
    knows); an unknown task is a StageError listing the known ones."""
    if isinstance(task, str):
        try:
            task = get_task(task)
        except KeyError as error:
            raise StageError(str(error.args[0])) from None
    return KINDS[task.kind](task)
