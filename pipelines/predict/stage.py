"""The Beam pipeline of `albert predict` (the command is `flows.predict`, which hands it the model):

    input files ─PlanSpans─▶ (file, span) ─Reshuffle─▶ ─ReadBlocks─▶ blocks of rows
      ─RunInference(BlockModelHandler)─▶ ─FormatPredictions─▶ (position, JSON line)
      ─WriteShards─▶ OUTPUT/predictions-*-of-*.jsonl
                                                    counts ─WriteSummary─▶ OUTPUT/predict.json

The Reshuffle spreads spans (a file's bytes from one block's first row to the next block's), not
rows: a grouping step's input is held in memory by the in-process runner, and a span is four
numbers where its rows are kilobytes. Each span is read from its byte offset after the shuffle.

Each output line is the input row's fields (or its `--id-column`) and `prediction`; each shard is
sorted by the rows' positions (file, row), so the bytes are the same on any runner, with any
number of workers. `predict.json` holds the counts: rows read and predicted, rows skipped by
reason, the predicted labels, the rows scored below `--confidence-bound`.
"""

from __future__ import annotations

import json
import struct

import apache_beam as beam
from apache_beam.ml.inference.base import RunInference

from albert.errors import StageError
from albert.fs import join, open_file
from pipelines.common.runner import CountingDoFn, WriteSummary, counted, run_stage
from pipelines.common.shards import WriteShards
from pipelines.predict.config import PredictConfig
from pipelines.predict.handler import BlockModelHandler
from pipelines.predict.rows import Columns, Span, blocks, file_spans, input_format, read_rows

NAMESPACE = "predict"
SUMMARY_FILE = "predict.json"
PREDICTIONS = "predictions"


def position_key(position: tuple[int, int]) -> bytes:
    """The sort key of a row's (file index, row index): big-endian, so bytes sort as numbers."""
    return struct.pack(">II", *position)


class PlanSpans(beam.DoFn):
    """(file index, path) -> (file index, path, span) for each span of `block_rows` rows (a
    compressed file: one span), found by a first reading of the file."""

    def __init__(self, config: PredictConfig, columns: Columns):
        self.config, self.columns = config, columns

    def process(self, item: tuple[int, str]):
        index, path = item
        fmt = input_format(path, self.config.input_format)
        config = self.config
        for span in file_spans(path, index, fmt, self.columns, config.on_error, config.block_rows):
            yield index, path, span


class ReadBlocks(CountingDoFn):
    """(file index, path, span) -> the span's rows in blocks of `block_rows`, counted."""

    def __init__(self, config: PredictConfig, columns: Columns):
        super().__init__(NAMESPACE)
        self.config, self.columns = config, columns

    def process(self, item: tuple[int, str, Span]):
        index, path, span = item
        fmt = input_format(path, self.config.input_format)
        rows = read_rows(path, index, fmt, self.columns, self.config.on_error, self.inc, span)
        yield from blocks(rows, self.config.block_rows)


def summary_label(prediction: dict) -> list[str]:
    """The labels a prediction counts under: its label, choice or multi-label labels."""
    if "labels" in prediction:
        return list(prediction["labels"])
    label = prediction.get("label", prediction.get("choice"))
    return [] if label is None else [str(label)]


class FormatPredictions(CountingDoFn):
    """A block's (row, prediction) pairs -> (sort key, JSON line), counting the predicted labels
    and the rows whose score is below `bound`."""

    def __init__(self, bound: float):
        super().__init__(NAMESPACE)
        self.bound = bound

    def process(self, pairs):
        for row, prediction in pairs:
            self.inc("predicted")
            for label in summary_label(prediction):
                self.inc(f"label:{label}")
            if prediction.get("score") is not None and prediction["score"] < self.bound:
                self.inc("below_confidence_bound")
            line = json.dumps({**row.fields, "prediction": prediction}, ensure_ascii=False)
            yield position_key(row.position), (line + "\n").encode("utf-8")


def write_summary(counts: dict[str, int], summary: dict, output_dir: str) -> None:
    """predict.json: `summary` with the counts summed in the pipeline."""
    labels = {name[6:]: n for name, n in counts.items() if name.startswith("label:")}
    others = {name: n for name, n in counts.items() if not name.startswith("label:")}
    result = {
        **summary,
        "rows": others.pop("rows", 0),
        "predicted": others.pop("predicted", 0),
        "below_confidence_bound": others.pop("below_confidence_bound", 0),
        "labels": labels,
        "skipped": others,
    }
    with open_file(join(output_dir, SUMMARY_FILE), "w") as handle:
        json.dump(result, handle, indent=2, sort_keys=True)


def build_pipeline(
    pipeline: beam.Pipeline,
    files: list[str],
    config: PredictConfig,
    columns: Columns,
    handler: BlockModelHandler,
    summary: dict,
    out: str,
) -> None:
    counts: list = []
    file_items = pipeline | "Files" >> beam.Create(list(enumerate(files)))
    planned = file_items | "Plan" >> beam.ParDo(PlanSpans(config, columns))
    spread = planned | "Spread" >> beam.Reshuffle()
    rows = counted(spread, "Read", ReadBlocks(config, columns), counts)
    predicted = rows | "Predict" >> RunInference(handler)
    lines = counted(predicted, "Format", FormatPredictions(config.confidence_bound), counts)
    _ = lines | "Write" >> WriteShards(join(out, PREDICTIONS), config.num_shards, ".jsonl")
    _ = pipeline | "WriteSummary" >> WriteSummary(
        write_summary, counts, summary=summary, output_dir=out
    )


def require_rows(summary: dict) -> None:
    """An input without a row to predict is an error, and nothing is committed."""
    if not summary["predicted"]:
        skipped = sum(summary["skipped"].values())
        why = f"all {skipped} rows were skipped" if skipped else "the files hold no rows"
        raise StageError(f"{', '.join(summary['files'])}: nothing to predict ({why})")


def run_pipeline(
    config: PredictConfig,
    files: list[str],
    columns: Columns,
    handler: BlockModelHandler,
    summary: dict,
    beam_args=None,
) -> dict:
    """Predict every row of `files` into `config.output`; returns predict.json."""
    return run_stage(
        config.output,
        beam_args,
        lambda pipeline, out: build_pipeline(
            pipeline, files, config, columns, handler, summary, out
        ),
        SUMMARY_FILE,
        check=require_rows,
    )
