"""`albert predict` as a Prefect flow (the `predict` deployment in prefect.yaml): its form takes the
model (a fine-tune's output) and the files; the run is the stage's cached, retried task
(`flows.engine.tasks.predict`) and ends with a markdown artifact: the predicted label
distribution, the share under the confidence bound, rows/s (`flows.report.text.predicted_table`).
"""

from __future__ import annotations

from typing import Any

from prefect import flow
from prefect.artifacts import create_markdown_artifact

from flows.engine import tasks
from flows.report.text import predicted_table
from pipelines.predict.config import PredictConfig


@flow(name="albert-predict", log_prints=True)
def predict_files(config: PredictConfig, beam_args: list[str] | None = None) -> Any:
    """Label every row of `config.input` with the fine-tuned model `config.model` into
    `config.output` (docs/predict.md).

    Args:
        config: `albert predict`'s flags: the model, the files, the columns, the output
        beam_args: Apache Beam pipeline options, e.g. `--runner=DataflowRunner` (default: none,
            Beam's in-process FnApiRunner)
    """
    summary = tasks.predict(config, list(beam_args or []))
    table = predicted_table([{"task": summary["task"], "predicted": summary}])
    create_markdown_artifact(table, key="albert-predict", description=config.output)
    print(table, flush=True)
    return summary
