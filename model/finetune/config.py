"""The fine-tuning stage's config, the hyperparameters of a run (the task's defaults, the values the
config sets), and the `TASK=DIR` option parser (`--multitask` here, `--downstream` in the flows)."""

from __future__ import annotations

from dataclasses import replace
from typing import Literal

from pydantic import Field, field_validator

from albert.config import ConfigError, StageConfig
from model.tasks import Hyperparameters, Task, get_task
from model.tasks.truncation import Truncation

# The classifier's input (`model.finetune.features`), a strategy of Sun et al. (2019).
Features = Literal["pooled", "cls", "concat_last4", "mean_last4", "mean_tokens"]
# The learning-rate schedule's two linear decays (`model.finetune.optimizer`).
Schedule = Literal["reference", "after_warmup"]


class FinetuneConfig(StageConfig):
    task: str = Field(
        description="a registered task: cola, sst2, mrpc, stsb, qqp, mnli, qnli, rte, wnli, "
        "squad1, squad2, race"
    )
    init: str = Field(
        description="pretrained model (.keras, Hugging Face dir, TF1 checkpoint) or 'random'"
    )
    spm_model: str = Field(description="SentencePiece model of the pretrained vocabulary")
    data_dir: str = Field(description="the task's directory (e.g. glue/SST-2, squad, RACE)")
    output: str = Field(description="output directory")
    preset: str = Field("albert-tiny", description="architecture when --init random")
    train_file: str | None = Field(
        None, description="training file/dir instead of the task's default"
    )
    dev_file: str | None = Field(None, description="dev file/dir instead of the task's default")
    learning_rate: float | None = Field(None, gt=0, description="peak learning rate (task default)")
    batch_size: int | None = Field(None, gt=0, description="batch size (task default)")
    classifier_dropout: float | None = Field(
        None, ge=0, lt=1, description="head dropout (task default)"
    )
    train_steps: int | None = Field(None, gt=0, description="training steps (task default)")
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
    weight_decay: float = Field(0.01, ge=0)
    seed: int = Field(12345)
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
    n_best_size: int = Field(20, gt=0)
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

    @field_validator("task")
    @classmethod
    def _known_task(cls, value: str) -> str:
        try:
            get_task(value)
        except KeyError as error:
            raise ValueError(error.args[0]) from None
        return value

    @field_validator("multitask")
    @classmethod
    def _task_dirs(cls, items: list[str]) -> list[str]:
        for item in items:
            parse_task_dir(item, "--multitask")
        return items


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


def parse_task_dir(item: str, option: str) -> tuple[str, str]:
    """`TASK=DIR` -> (TASK as written, DIR); a malformed item or an unknown task is a ConfigError
    naming `option` (e.g. `--multitask`)."""
    task, separator, directory = item.partition("=")
    if not separator or not task or not directory:
        raise ConfigError(
            f"{option} {item!r}: expected TASK=DIR, e.g. sst2=../shared/data/glue/SST-2"
        )
    try:
        get_task(task)
    except KeyError as error:
        raise ConfigError(f"{option} {item!r}: {error.args[0]}") from None
    return task, directory
