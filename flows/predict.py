"""`albert predict`: a fine-tuned model's predictions on any number of files, a Beam RunInference
job (in-process by default; `--runner DataflowRunner` through the flex template).

    albert predict --model runs/sst2 --input 'tickets/*.csv' --text-column body --output preds/

It lives with the flows because it joins two layers: the Beam pipeline (`pipelines.predict`) and
the fine-tuned model it runs (`model.predict`, handed to the pipeline's model handler as its
loader). Everything task-specific comes from the fine-tune's output (`model.predict.task_info`).
The output directory is written whole or not at all; a finished one is moved aside, never
overwritten. Formats, flags and errors: docs/predict.md.
"""

from __future__ import annotations

import functools
import sys
import time

from albert import signals
from albert.errors import ConfigError, StageError
from albert.fs import expand
from albert.stage import stage_main
from model.predict.kinds import predict_kind
from model.predict.task_info import TaskInfo, task_info
from pipelines.predict.config import PredictConfig
from pipelines.predict.rows import Columns


def input_files(patterns: list[str]) -> list[str]:
    """The files the patterns match, sorted and without repeats (their order is the rows')."""
    files = sorted({path for pattern in patterns for path in expand(pattern)})
    if not files:
        raise StageError(f"{', '.join(patterns)}: no input files")
    return files


def columns_of(config: PredictConfig, info: TaskInfo) -> Columns:
    """The columns each of the task's roles reads (`--text-column`: the first columns by default;
    `--question-column`, `--context-column`: `question`, `context` by default)."""
    given = {
        "text": tuple(config.text_column),
        "question": (config.question_column or "question",),
        "context": (config.context_column or "context",),
        "choices": tuple(config.choice_columns),
    }
    roles = predict_kind(info).roles(info)
    if "choices" in roles and not config.choice_columns:
        raise ConfigError(f"choice_columns: a {info.task} model needs its options' columns")
    return Columns({role: given[role] for role in roles}, roles, config.id_column)


def load_model(model_dir: str, config: PredictConfig):
    """The predictor of the fine-tune output `model_dir` (`model.predict.predictor.Predictor`):
    what each worker process loads once; the pipeline's model handler is given this function, so
    that it pickles without Keras."""
    from albert.errors import naming
    from model.conversion.convert import load_keras_file  # Keras: in the workers, once
    from model.finetune import models  # noqa: F401  (registers FinetuneModel for loading)
    from model.predict.predictor import Predictor

    info = task_info(model_dir)
    with naming(info.model_file):  # e.g. Keras refusing an unsafe .keras file
        model = load_keras_file(info.model_file, compile=False)
    return Predictor(info, model, config)


def run(config: PredictConfig, beam_args=None) -> dict:
    """Predict every row of the input files into `config.output`; returns predict.json with the
    run's time and rows/s."""
    from pipelines.predict.handler import BlockModelHandler  # Beam: once checked
    from pipelines.predict.stage import run_pipeline

    info = task_info(config.model)
    files = input_files(config.input)
    columns = columns_of(config, info)
    handler = BlockModelHandler(functools.partial(load_model, info.model_dir, config))
    summary = {
        "model": info.model_dir,
        "task": info.task,
        "kind": info.kind,
        "files": files,
        "windows": config.windows,
        "confidence_bound": config.confidence_bound,
        "output": config.output,
    }
    start = time.monotonic()
    result = run_pipeline(config, files, columns, handler, summary, beam_args)
    seconds = time.monotonic() - start
    return {**result, "seconds": round(seconds, 3), "rows_per_second": result["rows"] / seconds}


def main(argv=None, prog="python -m flows.predict") -> int:
    """The command line; a SIGTERM or SIGINT ends it with exit 75 and nothing written."""
    previous = signals.stopping(signals.nothing_written(prog))
    try:
        return stage_main(PredictConfig, run, argv, prog=prog, description=__doc__, beam=True)
    finally:
        signals.stopping(previous)


if __name__ == "__main__":
    sys.exit(main())
