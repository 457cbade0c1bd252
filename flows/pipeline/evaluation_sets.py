"""The evaluation sets the flow's decontamination stage checks: `--eval`'s, and by default the dev
sets the `--downstream` fine-tunes are scored on, so that no model is fine-tuned and scored on a
set whose overlap with its pretraining corpus went unreported."""

from __future__ import annotations

from albert.fs import join
from model.tasks import get_task


def downstream_sets(downstream: list[str], finetune: dict) -> list[str]:
    """The files each `TASK=DIR` fine-tune is scored on: `finetune`'s dev_file, else the task's
    dev files in DIR (GLUE `dev*.tsv`, SQuAD `dev-v1.1.json`, RACE `dev/`). A malformed item or
    an unknown task is said by the fine-tunes' own configs."""
    paths = []
    for item in downstream:
        task, _, directory = item.partition("=")
        try:
            spec = get_task(task)
        except KeyError:
            continue
        dev = finetune.get("dev_file")
        paths += [dev] if dev else [join(directory, name) for name in spec.dev_files]
    return paths


def evaluation_sets(eval_paths: list[str], downstream: list[str], finetune: dict) -> list[str]:
    """`--eval`'s paths, then the downstream dev sets not among them, each once."""
    return list(dict.fromkeys([*eval_paths, *downstream_sets(downstream, finetune)]))
