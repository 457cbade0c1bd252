"""The heldout stage: held-out pretraining metrics of a model written to OUTPUT/metrics.json
(`model.evaluation.heldout.evaluate_pretraining`; the flows' heldout task runs `run`).

Importing it loads no Keras: the flows build and check the config before any stage runs, and
`run` imports the evaluation when it is called.
"""

from __future__ import annotations

import json

from pydantic import Field

from albert.config import StageConfig
from albert.fs import join, open_file
from albert.outputs import atomic_output_dir

METRICS_FILE = "metrics.json"


class HeldOutEvalConfig(StageConfig):
    """Held-out pretraining metrics of a model (masked-LM accuracy, perplexity, SOP accuracy)."""

    model: str = Field(
        description="model to score: a .keras file, a Hugging Face dir or a TF1 checkpoint"
    )
    data: str = Field(description="held-out TFRecords: a directory, a shard or a glob")
    output: str = Field(description="directory for metrics.json")
    batch_size: int = Field(32, gt=0, description="evaluation batch size")
    max_batches: int | None = Field(
        None, gt=0, description="score at most this many batches (default: all)"
    )


def run(config: HeldOutEvalConfig) -> dict:
    """Score `config.model` on the held-out split of `config.data`; writes OUTPUT/metrics.json
    whole (an atomic output directory) and returns the metrics."""
    from model.evaluation.heldout import evaluate_pretraining  # heavy: Keras and its backend

    metrics = evaluate_pretraining(
        config.model, config.data, config.batch_size, max_batches=config.max_batches
    )
    with (
        atomic_output_dir(config.output) as out,
        open_file(join(out, METRICS_FILE), "w") as handle,
    ):
        json.dump(metrics, handle, indent=2, sort_keys=True)
    return dict(metrics)
