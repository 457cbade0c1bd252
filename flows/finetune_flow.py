"""The fine-tuning stage as a Prefect flow: the `finetune` deployment (prefect.yaml), whose form
is `FinetuneConfig`'s fields. A team's own task is its files and columns (`train_file`,
`dev_file`, `text_column`, `label_column`; docs/finetune.md "Your own task"), a registered task its
name and directory (`task`, `data_dir`). The run is `albert finetune`'s (`flows.finetune.run`, in
the flows' `finetune` task: cached, resumed after a stop)."""

from __future__ import annotations

from typing import Any

from prefect import flow

from flows.engine import tasks
from model.finetune.config import FinetuneConfig


@flow(name="albert-finetune", log_prints=True)
def finetune(config: FinetuneConfig) -> dict[str, Any]:
    """Fine-tune a model on a task, score its dev set, write the model and its Hugging Face and
    keras-hub exports; returns the summary (task, dev metrics, output).

    Args:
        config: `albert finetune`'s flags: your own task's files and columns, or a registered
            task and its directory; the pretrained model, its SentencePiece model, the output
    """
    return tasks.finetune(config)
