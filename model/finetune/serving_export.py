"""A fine-tune output's serving export (`model.predict.serving`, `OUTPUT/export/saved_model`) on
either backend: on TensorFlow from the fine-tuned model in memory; on JAX from the output's
`model.keras`, in a TensorFlow-backend process (`KERAS_BACKEND=tensorflow python -m
model.finetune.serving_export OUTPUT`), which gives the same graph."""

from __future__ import annotations

import os
import subprocess
import sys

import keras

from albert.errors import StageError
from albert.fs import join
from model.conversion.convert import load_keras_file
from model.finetune import models  # noqa: F401  (registers FinetuneModel for loading)
from model.predict.serving import SAVED_MODEL, export_saved_model
from model.predict.task_info import task_info
from model.tasks.parallel_encoding import CODE_ROOT


def export_serving(output_dir: str, model: keras.Model) -> str:
    """`export_saved_model(output_dir, model)`, off the TensorFlow backend from
    `output_dir/model.keras` (written) in a TensorFlow-backend process; that process failing is a
    StageError with its last line."""
    if keras.config.backend() == "tensorflow":
        return export_saved_model(output_dir, model)
    path = os.pathsep.join(filter(None, [CODE_ROOT, os.environ.get("PYTHONPATH")]))
    environment = {**os.environ, "KERAS_BACKEND": "tensorflow", "PYTHONPATH": path}
    command = [sys.executable, "-P", "-m", __name__, output_dir]
    done = subprocess.run(command, env=environment, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no message"])[-1]
        raise StageError(f"{output_dir}: the serving export on TensorFlow failed: {last}")
    return join(output_dir, SAVED_MODEL)


def export_from_file(output_dir: str) -> None:
    """The serving export of the fine-tune output `output_dir` from its model.keras: what
    `export_serving` runs in a TensorFlow-backend process (an internal entry point, not a
    command)."""
    model = load_keras_file(task_info(output_dir).model_file, compile=False)
    export_saved_model(output_dir, model)


if __name__ == "__main__":
    export_from_file(sys.argv[1])
