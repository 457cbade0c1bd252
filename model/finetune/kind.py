"""The task-kind interface: how one kind of task (GLUE, SQuAD, RACE) is read and encoded, its head
on the backbone, trained (its loss), scored, and how its predictions are written and scored from
files. A run looks its kind
up once (`model.finetune.kinds.task_kind`) and never branches on the task kind again."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any

import keras
import numpy as np

from albert.errors import StageError
from albert.fs import join
from albert.tokenization import AlbertTokenizer
from model.finetune.config import FinetuneConfig, Hyperparameters
from model.network.heads import SequenceClassificationHead
from model.runtime import cores
from model.tasks import Task
from model.tasks.parallel_encoding import encode_split
from model.tasks.splits import SplitSettings, read_examples

MODEL_INPUTS = ("input_ids", "segment_ids", "input_mask")


@dataclass
class TaskData:
    """A task's encoded data: `train`/`dev` hold the model inputs and `labels`; `dev_examples` are
    the dev examples in order; `train_texts` the training text, a list of lines per document (for
    further pretraining); `counts` what was read and skipped per split."""

    train_path: str
    dev_path: str
    train: dict[str, Any]
    dev: dict[str, Any]
    dev_examples: list
    train_texts: list[list[str]]
    counts: dict[str, Any]


def inputs_of(arrays: dict) -> dict[str, np.ndarray]:
    """The model inputs among `arrays` (no labels)."""
    return {k: arrays[k] for k in MODEL_INPUTS}


def split_settings(
    config: FinetuneConfig,
    hp: Hyperparameters,
    path: str,
    training: bool,
    holdout_cut: int = 0,
    source: str | None = None,
) -> SplitSettings:
    """The settings of the training split or the dev split in `path` (a dev file's name without
    extension names its GLUE layout: dev, dev_matched ...); `source`: the task's `Task.source`."""
    return SplitSettings(
        task=config.task,
        path=path,
        split="train" if training else path.rsplit("/", 1)[-1].split(".")[0],
        spm_model=config.spm_model,
        max_seq_length=hp.max_seq_length,
        limit=config.max_train_examples if training else config.max_dev_examples,
        on_error=config.on_error,
        truncation=config.truncation,
        head_tokens=config.head_tokens,
        doc_stride=config.doc_stride,
        max_query_length=config.max_query_length,
        holdout_seed=config.seed,
        holdout_cut=holdout_cut,
        task_source=source,
    )


def encoded(
    settings: SplitSettings,
    tokenizer: AlbertTokenizer,
    examples: list,
    config: FinetuneConfig,
    counts: dict,
) -> dict[str, np.ndarray]:
    """`model.tasks.splits.encode` of `examples` in `config.input_workers` processes (resolved
    by `TaskKind.load`), its counts added to `counts`."""
    arrays, added = encode_split(settings, tokenizer, examples, config.input_workers)
    for key, value in added.items():
        counts[key] = counts.get(key, 0) + value
    return arrays


class TaskKind(ABC):
    """One kind of task, bound to its `spec` (the registered `Task`). Subclasses set
    `empty_reason` (why a split without examples is empty), `null_odds_file` (a second predictions
    file, or None), `token_outputs` (whether the outputs are per token: SQuAD's start and end
    logits), `hf_architecture` (the Hugging Face class of the export, `model.finetune.exports`)
    and `problem_type` (Hugging Face's, of a sequence classifier, which keras-hub's
    `AlbertTextClassifier` exports too; None for the others). The head `model.finetune.models`
    builds for the kind and how it reads the backbone are the class methods `head`, `model_rows`
    and `head_outputs`: this default is a classification or regression head on the features."""

    empty_reason = "the file is empty or has only a header"
    null_odds_file: str | None = None
    token_outputs = False
    hf_architecture: str | None = None
    problem_type: str | None = None

    def __init__(self, spec: Task):
        self.spec = spec

    @classmethod
    def head(cls, backbone_config, head_config, num_labels: int) -> keras.layers.Layer:
        """The kind's head: `num_labels` logits over the features (`head_config`: the backbone's
        config with the features' width and the head's dropout)."""
        return SequenceClassificationHead(head_config, num_labels, name="classifier_head")

    @classmethod
    def model_rows(cls, inputs: dict) -> dict:
        """The inputs as the backbone's `[B, T]` rows (multiple choice flattens its choices)."""
        return inputs

    @classmethod
    def head_outputs(cls, model, outputs: dict, inputs: dict, shape, training: bool):
        """The prediction of `model.head` from the backbone's `outputs` over `inputs` (the model
        rows; `shape`: the given inputs' shape)."""
        return model.head(model.pool(outputs, inputs["input_mask"]), training=training)

    def paths(self, config: FinetuneConfig) -> tuple[str, str]:
        """(training path, dev path): the config's files, else the task's defaults in data_dir."""
        train = config.train_file or join(config.data_dir, self.spec.train_file)
        dev = config.dev_file or join(config.data_dir, self.spec.dev_files[0])
        return train, dev

    def load(
        self,
        config: FinetuneConfig,
        tokenizer: AlbertTokenizer,
        hp: Hyperparameters,
        with_train: bool = True,
        threshold: float | None = None,
    ) -> TaskData:
        """Read and encode the task's data; `with_train=False` reads only the dev data (scoring a
        fine-tuned model; a SQuAD v2 null threshold is then `threshold`). No training or dev
        examples is a StageError naming the file, raised before any training. The examples are
        encoded in `--input-workers` processes (`model.runtime.cores.input_workers`)."""
        workers = cores.input_workers(config.input_workers, cores.on_accelerator())
        config = config.model_copy(update={"input_workers": workers})
        data = self.read(config, tokenizer, hp, with_train, threshold)
        if with_train:
            self.require_examples(data, data.train_path, "train", len(data.train["input_ids"]))
        self.require_examples(data, data.dev_path, "dev", len(data.dev_examples))
        return data

    def require_examples(self, data: TaskData, path: str, split: str, count: int) -> None:
        if count:
            return
        counts = data.counts.get(split, {})
        skipped = sum(n for name, n in counts.items() if name.startswith("skipped"))
        if skipped:
            why = f"all {skipped} rows were malformed and skipped"
        elif counts.get("questions"):
            why = f"none of its {counts['questions']} questions could be used"
        else:
            why = self.empty_reason
        raise StageError(f"{path}: no {split} examples ({why})")

    def predict(self, model: keras.Model, data: TaskData, batch_size: int):
        return model.predict(inputs_of(data.dev), batch_size=batch_size, verbose=0)

    def read(
        self,
        config: FinetuneConfig,
        tokenizer: AlbertTokenizer,
        hp: Hyperparameters,
        with_train: bool,
        threshold: float | None,
    ) -> TaskData:
        """The task's data, unchecked (see `load`): every example of a split encoded."""
        counts = {"train": {}, "dev": {}}
        train_path, dev_path = self.paths(config)
        train = split_settings(config, hp, train_path, True, source=self.spec.source)
        dev = split_settings(config, hp, dev_path, False, source=self.spec.source)
        train_examples = read_examples(train, counts["train"]) if with_train else []
        dev_examples = read_examples(dev, counts["dev"])
        return TaskData(
            train_path,
            dev_path,
            encoded(train, tokenizer, train_examples, config, counts["train"]),
            encoded(dev, tokenizer, dev_examples, config, counts["dev"]),
            dev_examples,
            self.texts(train_examples),
            counts,
        )

    def soft_target_loss(self, temperature: float) -> keras.distillation.LogitsDistillation:
        """The distillation's soft-target loss: T^2 * KL at temperature T over the class or
        choice logits (Hinton et al.)."""
        return keras.distillation.LogitsDistillation(temperature, keras.losses.KLDivergence())

    @abstractmethod
    def texts(self, examples: list) -> list[list[str]]:
        """The training text of `examples`, a list of lines per document (`TaskData`)."""

    @abstractmethod
    def loss(self) -> Any:
        """The Keras loss of the task's model outputs."""

    @abstractmethod
    def score(
        self, model: keras.Model, data: TaskData, batch_size: int
    ) -> tuple[dict[str, float], Any]:
        """Dev metrics of `model` (and the raw predictions, for `write_predictions`)."""

    @abstractmethod
    def write_predictions(self, directory: str, data: TaskData, predictions: Any) -> str:
        """Write the dev predictions in the task's format under `directory`; return the path."""

    @abstractmethod
    def score_files(
        self,
        gold: str,
        predictions: str,
        na_probs: str | None = None,
        threshold: float | None = None,
    ) -> dict:
        """Scores of a predictions file against a gold file (`model.evaluation.evaluate`)."""
