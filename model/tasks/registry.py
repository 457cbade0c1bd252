"""The task registry: every task `albert finetune`, `albert distill`, `albert evaluate`, the flows
and decontamination know, each registered once with its aliases (as seqio's `TaskRegistry`)."""

from __future__ import annotations

from model.tasks.task import Task


class TaskRegistry:
    """Tasks by name; a name is looked up case-, `-` and `_`-insensitively, aliases included."""

    def __init__(self) -> None:
        self._tasks: dict[str, Task] = {}
        self._aliases: dict[str, str] = {}

    @staticmethod
    def key(name: str) -> str:
        return name.lower().replace("-", "").replace("_", "")

    def register(self, task: Task, aliases: tuple[str, ...] = ()) -> Task:
        """Add `task` under its name and `aliases`; a name taken already is a ValueError."""
        for name in (task.name, *aliases):
            key = self.key(name)
            if key in self._aliases:
                raise ValueError(f"task name {name!r} is registered already")
            self._aliases[key] = task.name
        self._tasks[task.name] = task
        return task

    def get(self, name: str) -> Task:
        """The task called `name` (or an alias of it); an unknown name is a KeyError listing the
        known tasks."""
        key = self.key(name)
        if key not in self._aliases:
            raise KeyError(f"unknown task {name!r}; known: {', '.join(self._tasks)}")
        return self._tasks[self._aliases[key]]

    def names(self) -> list[str]:
        """The registered tasks' names, in registration order."""
        return list(self._tasks)


TASKS = TaskRegistry()


def get_task(name: str) -> Task:
    """`TASKS.get(name)`."""
    return TASKS.get(name)
