"""A team's task directory: `DIR/task.yaml` holds a user's own task's settings once (its files,
relative to DIR; its text and label columns; its kind ...). Fine-tuning reads it as config fields
(`model.finetune.config.task_yaml`), decontamination for the texts of its evaluation file
(`pipelines.decontaminate.eval_sets`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from albert.config import ConfigError, read_yaml
from albert.fs import exists, join

TASK_YAML = "task.yaml"
FILES = ("train", "dev")  # the keys naming files, relative to the directory


def read_task_yaml(data_dir: str) -> dict[str, Any]:
    """The settings of `DIR/task.yaml` as written, its `train` and `dev` joined to DIR; {} when
    DIR holds none; a YAML document that is no mapping is a ConfigError naming the file."""
    path = join(data_dir, TASK_YAML) if data_dir else ""
    if not path or not exists(path):
        return {}
    values = read_yaml(path) or {}
    if not isinstance(values, dict):
        raise ConfigError(f"{path}: expected a mapping of the task's settings")
    return {
        **values,
        **{key: join(data_dir, str(values[key])) for key in FILES if values.get(key) is not None},
    }


def text_columns(value: str | Sequence[str] | None) -> tuple[str, ...]:
    """A `text_column` setting as columns: a list, or one string of comma-separated columns."""
    if value is None:
        return ()
    if isinstance(value, str):
        return tuple(part.strip() for part in value.split(",") if part.strip())
    return tuple(str(column) for column in value)


def has_header(columns: Sequence[str], header: bool | None) -> bool:
    """Whether CSV/TSV files start with a header: `header` when given, else yes when a column
    is named and no when all are 0-based indexes."""
    return not all(str(column).isdigit() for column in columns) if header is None else header
