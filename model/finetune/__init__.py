"""Fine-tuning ALBERT on GLUE, SQuAD and RACE (`python -m model.finetune`, `albert finetune`).

One role per module: `config` (the stage config, the run's hyperparameters, the `TASK=DIR`
parser), `kind` and `kinds` (the task-kind interface and its lookup) with `glue`, `squad` and
`race` (the kinds), `models` (the Keras models), `features` and `optimizer` (Sun et al.'s
strategies), `batches`, `training` (fit with early stopping, checkpoints and resume), `progress`
(the progress lines), `resume` (where the checkpoints are, which one a re-run resumes),
`multitask`, `stage` (`run`) and `cli` (`main`).

Importing the package loads no Keras: the config and the command line come first, the models and
`run` (Keras and its backend) when first used.
"""

from importlib import import_module

from model.finetune.cli import main
from model.finetune.config import (
    FinetuneConfig,
    Hyperparameters,
    hyperparameters,
    parse_task_dir,
)

_HEAVY = {"FinetuneModel": "models", "MultiTaskModel": "models", "run": "stage"}


def __getattr__(name: str):
    """The Keras-backed names, imported on first use."""
    if name in _HEAVY:
        return getattr(import_module(f"model.finetune.{_HEAVY[name]}"), name)
    raise AttributeError(f"module 'model.finetune' has no attribute {name!r}")


__all__ = [
    "FinetuneConfig",
    "FinetuneModel",
    "Hyperparameters",
    "MultiTaskModel",
    "hyperparameters",
    "main",
    "parse_task_dir",
    "run",
]
