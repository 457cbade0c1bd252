"""The settings of `albert predict` (`PredictConfig`), without Beam: the command line checks them,
and the predictor (`model.predict`) reads them, before Beam or Keras is imported."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from albert.config import CommaList, StageConfig

InputFormat = Literal["auto", "csv", "tsv", "jsonl", "text"]
OnError = Literal["fail", "skip"]


class PredictConfig(StageConfig):
    model: str = Field(description="a fine-tune's output directory (model.keras + results.json)")
    input: Annotated[list[str], CommaList] = Field(
        description="files or globs to predict on: CSV, TSV (a header row), JSONL, plain text "
        "(one text a line)"
    )
    output: str = Field(description="output directory: predictions-*.jsonl + predict.json")
    input_format: InputFormat = Field(
        "auto", description="auto: by extension (.csv, .tsv, .jsonl/.json, anything else text)"
    )
    text_column: Annotated[list[str], CommaList] = Field(
        default_factory=list,
        description="one or two columns (names, or 0-based indexes) holding the text or the pair "
        "(default: the first column; a pair task: the first two)",
    )
    question_column: str | None = Field(
        None, description="SQuAD and multiple-choice models: the question's column"
    )
    context_column: str | None = Field(
        None, description="SQuAD: the context's column; multiple choice: the article's"
    )
    choice_columns: Annotated[list[str], CommaList] = Field(
        default_factory=list, description="multiple-choice models: the options' columns, in order"
    )
    id_column: str | None = Field(
        None, description="keep only this column of the input row before the predictions"
    )
    windows: bool = Field(
        False,
        description="classification and regression: average over overlapping windows of a long "
        "text (a pair's second) instead of the fine-tune's truncation",
    )
    window_stride: int | None = Field(
        None, gt=0, description="pieces between two windows' starts (default: half a window)"
    )
    top_k: int = Field(3, ge=1, description="classification: the k best labels with their scores")
    confidence_bound: float = Field(
        0.5, ge=0, le=1, description="predict.json counts the rows whose score is below this"
    )
    batch_size: int | None = Field(
        None, gt=0, description="rows a predict step takes (default: the fine-tune's batch size)"
    )
    block_rows: int = Field(
        256,
        gt=0,
        description="consecutive rows read and predicted together (sorted by length inside)",
    )
    on_error: OnError = Field(
        "fail", description="an undecodable or malformed row: fail naming it, or count and skip it"
    )
    num_shards: int = Field(1, gt=0, description="output shards")
