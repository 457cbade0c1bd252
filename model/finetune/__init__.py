"""Fine-tuning ALBERT on GLUE, SQuAD and RACE (`python -m model.finetune`, `albert finetune`).

One role per module: `config` (the stage config, Table 14, the `TASK=DIR` parser), `kind` and
`kinds` (the task-kind interface and its lookup) with `glue`, `squad` and `race` (the kinds),
`models` (the Keras models), `features` and `optimizer` (Sun et al.'s strategies), `batches`,
`training` (fit with early stopping), `multitask`, and `stage` (run and main).
"""

from model.finetune.config import (
    TABLE_14,
    FinetuneConfig,
    Hyperparameters,
    hyperparameters,
    parse_task_dir,
)
from model.finetune.models import FinetuneModel, MultiTaskModel
from model.finetune.stage import main, run

__all__ = [
    "TABLE_14",
    "FinetuneConfig",
    "FinetuneModel",
    "Hyperparameters",
    "MultiTaskModel",
    "hyperparameters",
    "main",
    "parse_task_dir",
    "run",
]
