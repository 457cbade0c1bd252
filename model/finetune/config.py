"""The fine-tuning stage's config, the hyperparameters of a run (the task's defaults, the values the
config sets), and the `TASK=DIR` option parser (`--multitask` here, `--downstream` in the flows)."""

from __future__ import annotations

import logging
import math
from dataclasses import replace
from typing import Annotated, Any, Literal

from pydantic import Field, field_validator, model_validator

from albert.config import CommaList, ConfigError, Encoding, StageConfig
from albert.task_yaml import TASK_YAML, has_header, read_task_yaml
from model.tasks import Hyperparameters, Task, get_task
from model.tasks.own_task import OwnKind, OwnTaskSettings, own_task
from model.tasks.truncation import Truncation

# The classifier's input (`model.finetune.features`), a strategy of Sun et al. (2019).
Features = Literal["pooled", "cls", "concat_last4", "mean_last4", "mean_tokens"]
# The learning-rate schedule's two linear decays (`model.finetune.optimizer`).
Schedule = Literal["reference", "after_warmup"]
logger = logging.getLogger(__name__)


class OwnTaskFields(StageConfig):
    """The fields that name a task: a registered one, or a user's own from its files and columns
    (flags or `--data-dir` with its `task.yaml`), shared by `albert finetune` and `albert
    evaluate`."""

    task: str = Field(
        description="a registered task (cola, sst2, mrpc, stsb, qqp, mnli, qnli, rte, wnli, "
        "squad1, squad2, race), or your own task's name (default: the --train-file's stem)"
    )
    data_dir: str = Field(
        "",
        description="the task's directory (e.g. glue/SST-2, squad, RACE; your own task's: one "
        "with a task.yaml of its settings)",
    )
    train_file: str | None = Field(
        None,
        description="training file/dir instead of the task's default (your own task's: CSV, TSV "
        "or JSON Lines; a glob or gs:// too)",
        json_schema_extra={"flags": ["--train"]},
    )
    dev_file: str | None = Field(
        None,
        json_schema_extra={"flags": ["--dev"]},
        description="dev file/dir instead of the task's default (your own task's: none holds "
        "out --dev-fraction of train)",
    )
    text_column: Annotated[list[str], CommaList] = Field(
        default_factory=list,
        description="your own task: the text column, or two (a pair): header names or 0-based "
        "indexes of the CSV/TSV/JSONL --train-file and --dev-file",
    )
    label_column: str = Field("label", description="your own task: the label column")
    header: bool | None = Field(
        None,
        description="your own task: whether the CSV/TSV files start with a header (default: "
        "yes when the columns are named, no when they are indexes)",
    )
    kind: OwnKind | None = Field(
        None,
        description="your own task's kind (default: inferred from the labels: a JSON list or "
        "--label-separator is multi_label, fractions are regression, the rest classification)",
    )
    label_separator: str | None = Field(
        None,
        description="your own task: multi-label, each row's labels split on this (a JSON list "
        "per row needs none)",
    )
    encoding: Encoding = Field("utf-8", description="your own task: the files' text encoding")
    dev_fraction: float = Field(
        0.1,
        gt=0,
        lt=1,
        description="your own task without --dev-file: the share of train held out as dev, "
        "chosen by a hash of each row's text",
    )

    @model_validator(mode="before")
    @classmethod
    def _own_task(cls, values: Any) -> Any:
        """A `task.yaml` in --data-dir fills what the flags leave unset or None (its paths
        relative to the directory); your own task's name defaults to the training file's stem."""
        if not isinstance(values, dict):
            return values
        given = {key: value for key, value in values.items() if value is not None}
        values = {**values, **task_yaml(values.get("data_dir") or ""), **given}
        if values.get("text_column") and not values.get("task") and values.get("train_file"):
            stem = str(values["train_file"]).rstrip("/").rsplit("/", 1)[-1].split(".")[0]
            values["task"] = stem
        return values


class FinetuneConfig(OwnTaskFields):
    init: str = Field(
        description="pretrained model (.keras, Hugging Face dir, TF1 checkpoint) or 'random'"
    )
    spm_model: str = Field(description="SentencePiece model of the pretrained vocabulary")
    output: str = Field(description="output directory")
    preset: str = Field("albert-tiny", description="architecture when --init random")
    learning_rate: float | None = Field(None, gt=0, description="peak learning rate (task default)")
    batch_size: int | None = Field(None, gt=0, description="batch size (task default)")
    classifier_dropout: float | None = Field(
        None, ge=0, lt=1, description="head dropout (task default)"
    )
    train_steps: int | None = Field(None, gt=0, description="training steps (task default)")
    epochs: float | None = Field(
        None,
        gt=0,
        description="train this many passes over the training set: the steps (and a tenth of "
        "them as warmup, unless --warmup-steps) derived from its size and logged; --train-steps "
        "wins",
    )
    warmup_steps: int | None = Field(None, ge=0, description="linear warmup steps (task default)")
    schedule: Schedule = Field(
        "reference",
        description="linear decay over all the steps, warmup replacing the first (reference: "
        "google-research/albert, BERT) or from the peak after warmup (after_warmup: Hugging "
        "Face's linear)",
    )
    max_seq_length: int | None = Field(None, gt=8, description="sequence length (task default)")
    eval_every: int | None = Field(
        None, gt=0, description="steps between dev evaluations (default: an epoch)"
    )
    patience: int = Field(3, ge=1, description="evaluations without improvement before stopping")
    weight_decay: float = Field(0.01, ge=0, description="AdamW weight decay")
    seed: int = Field(12345, description="random seed (initialisation, order, dropout)")
    max_train_examples: int | None = Field(
        None, gt=0, description="use only the first N training examples"
    )
    max_dev_examples: int | None = Field(
        None, gt=0, description="use only the first N dev examples"
    )
    on_error: Literal["fail", "skip"] = Field(
        "fail", description="malformed GLUE rows: fail or count and skip"
    )
    truncation: Truncation = Field(
        "head", description="long texts: head, tail or head_tail (Sun et al.)"
    )
    head_tokens: int = Field(128, ge=0, description="head length of head_tail truncation")
    features: Features = Field(
        "pooled", description="classifier input: pooled, cls, concat_last4, mean_last4, mean_tokens"
    )
    layer_decay: float = Field(
        1.0, gt=0, le=1, description="layer-wise lr decay xi (1 = off; Sun et al.: 0.95)"
    )
    further_pretrain_steps: int = Field(
        0, ge=0, description="pretrain on the task's text first (0 = no)"
    )
    multitask: list[str] = Field(
        default_factory=list, description="TASK=DIR trained jointly before the task"
    )
    multitask_steps: int = Field(
        0, ge=0, description="steps of multi-task training (default: train steps)"
    )
    doc_stride: int = Field(128, gt=0, description="SQuAD window stride")
    max_query_length: int = Field(64, gt=0, description="SQuAD question pieces kept")
    n_best_size: int = Field(20, gt=0, description="SQuAD answers kept per question")
    max_answer_length: int = Field(30, gt=0, description="SQuAD longest answer in pieces")
    threshold_holdout: float = Field(
        0.1,
        gt=0,
        lt=1,
        description="SQuAD v2: share of training articles held out to tune the null threshold",
    )
    verbose_fit: int = Field(0, ge=0, le=2, description="Keras fit verbosity")
    quiet: bool = Field(
        False, description="no progress lines (the step, steps/s, time left, dev metrics)"
    )
    checkpoint_every: int = Field(
        500,
        gt=0,
        description="steps between checkpoints in OUTPUT.checkpoints/ (one is written at a "
        "SIGTERM or SIGINT too, and the same command resumes from the newest)",
    )
    keep_checkpoints: int = Field(2, gt=0, description="checkpoints kept (the newest)")
    input_workers: int | None = Field(
        None,
        ge=0,
        description="processes that tokenize and encode the examples; 0 = the training process; "
        "default: every core with an accelerator, 0 on CPU. The features and batches are the same "
        "for any number",
    )

    @model_validator(mode="after")
    def _known_task(self) -> FinetuneConfig:
        if self.text_column:
            if not self.train_file:
                raise ValueError("--text-column (your own task) needs --train-file")
            if len(self.text_column) > 2:
                raise ValueError(f"--text-column {self.text_column}: one column or two")
            return self
        try:
            get_task(self.task)
        except KeyError as error:
            raise ValueError(f"{error.args[0]} (your own task: give --text-column)") from None
        if not self.data_dir and not (self.train_file and self.dev_file):
            raise ValueError(f"--task {self.task}: give --data-dir")
        return self

    @model_validator(mode="after")
    def _head_tail_keeps_a_tail(self) -> FinetuneConfig:
        """`--truncation head_tail` whose head fills the sequence (`--head-tokens` at least
        `--max-seq-length` less [CLS] and [SEP]) would be `head`: an error, not a silent no-op."""
        budget = (self.max_seq_length or 0) - 2
        if self.truncation == "head_tail" and 0 < budget <= self.head_tokens:
            raise ValueError(
                f"--truncation head_tail with --head-tokens {self.head_tokens} at --max-seq-length "
                f"{self.max_seq_length} keeps the head alone: give --head-tokens below {budget}"
            )
        return self

    @field_validator("multitask")
    @classmethod
    def _task_dirs(cls, items: list[str]) -> list[str]:
        for item in items:
            parse_task_dir(item, "--multitask")
        return items


def own_settings(config: FinetuneConfig) -> OwnTaskSettings | None:
    """Your own task's settings (`model.tasks.own_task`), None for a registered task."""
    if not config.text_column:
        return None
    header = has_header(config.text_column, config.header)
    return OwnTaskSettings(
        name=config.task,
        train=config.train_file,
        text_columns=tuple(config.text_column),
        label_column=config.label_column,
        dev=config.dev_file,
        header=header,
        kind=config.kind,
        label_separator=config.label_separator,
        encoding=config.encoding,
        dev_fraction=config.dev_fraction,
    )


def task_of(config: FinetuneConfig) -> Task:
    """The task `config` fine-tunes: your own (`own_settings`) or a registered one."""
    settings = own_settings(config)
    return own_task(settings) if settings is not None else get_task(config.task)


def task_yaml(data_dir: str) -> dict[str, Any]:
    """The settings of `DIR/task.yaml` (`albert.task_yaml`) as config fields (`train`, `dev` ->
    `train_file`, `dev_file`, relative to DIR; `name` -> `task`); {} without one."""
    names = {"train": "train_file", "dev": "dev_file", "name": "task"}
    return {names.get(key, key): value for key, value in read_task_yaml(data_dir).items()}


def hyperparameters(config: FinetuneConfig, task: Task) -> Hyperparameters:
    """The task's defaults (`Task.defaults`) with the values `config` sets."""
    row = task.defaults
    return replace(
        row,
        learning_rate=config.learning_rate or row.learning_rate,
        batch_size=config.batch_size or row.batch_size,
        classifier_dropout=row.classifier_dropout
        if config.classifier_dropout is None
        else config.classifier_dropout,
        train_steps=config.train_steps or row.train_steps,
        warmup_steps=row.warmup_steps if config.warmup_steps is None else config.warmup_steps,
        max_seq_length=config.max_seq_length or row.max_seq_length,
    )


def with_epochs(config: FinetuneConfig, hp: Hyperparameters, examples: int) -> Hyperparameters:
    """`hp` with the steps of `config.epochs` passes over `examples` training rows (at least one
    step) and a tenth of them as warmup (unless --warmup-steps); `hp` as it is without --epochs or
    with --train-steps. The derived figures are logged."""
    if config.epochs is None or config.train_steps:
        return hp
    steps = max(1, math.ceil(config.epochs * examples / hp.batch_size))
    warmup = steps // 10 if config.warmup_steps is None else config.warmup_steps
    logger.info(
        "%s: %g epochs of %d examples at batch %d: %d steps, %d of warmup",
        config.task,
        config.epochs,
        examples,
        hp.batch_size,
        steps,
        warmup,
    )
    return replace(hp, train_steps=steps, warmup_steps=warmup)


def parse_task_dir(item: str, option: str) -> tuple[str, str]:
    """`TASK=DIR` -> (TASK as written, DIR): a registered task, or a user's task whose DIR holds
    its `task.yaml` (TASK names it); a malformed item or an unknown task is a ConfigError naming
    `option` (e.g. `--multitask`)."""
    task, separator, directory = item.partition("=")
    if not separator or not task or not directory:
        raise ConfigError(
            f"{option} {item!r}: expected TASK=DIR, e.g. sst2=../shared/data/glue/SST-2"
        )
    try:
        get_task(task)
    except KeyError as error:
        if not task_yaml(directory):
            raise ConfigError(
                f"{option} {item!r}: {error.args[0]}, and {directory} holds no {TASK_YAML}"
            ) from None
    return task, directory
