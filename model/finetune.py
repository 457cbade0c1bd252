"""Fine-tune ALBERT on a GLUE task, SQuAD v1.1/v2.0 or RACE with Keras `fit`.

    python -m model.finetune --task sst2 --init export/model.keras --spm-model spiece.model \
        --data-dir glue/SST-2 --output runs/sst2

AdamW with linear warmup and linear decay; per-task defaults (learning rate, batch size, classifier
dropout, steps, warmup, sequence length) from Table 14 of the ALBERT paper; the dev metric is
computed every `eval_every` steps, training stops after `patience` evaluations without improvement
and the best weights are kept. Writes `OUTPUT/results.json`, a predictions file
(`predictions.tsv` for GLUE, `predictions.json` + `null_odds.json` for SQuAD, `predictions.jsonl`
for RACE) and the fine-tuned `model.keras`. The strategies of Sun et al. (2019) are flags:
`--truncation`, `--features`, `--layer-decay`, `--learning-rate`, `--further-pretrain-steps`,
`--multitask TASK=DIR` (see `model.finetune_strategies` and docs/finetune.md).
"""

from __future__ import annotations

import json
import logging
import math
import sys
from typing import Any, Literal

import keras
import numpy as np
from pydantic import Field

from albert.config import StageConfig
from albert.errors import StageError, naming
from albert.fs import exists, join, makedirs, open_file
from albert.hashing import stable_hash
from albert.outputs import atomic_output_dir
from albert.stage import stage_main
from albert.tokenization import AlbertTokenizer
from model.backbone import AlbertBackbone
from model.config import get_preset
from model.finetune_input import mixture_batches, train_batches
from model.finetune_strategies import (
    Features,
    LayerFeatures,
    LayerwiseAdamW,
    Truncation,
    feature_size,
    layerwise_multipliers,
    needs_hidden_states,
)
from model.heads import MultipleChoiceHead, SequenceClassificationHead, SpanExtractionHead
from model.optimizers import DEFAULT_EXCLUDE, WarmupPolynomialDecay
from model.tasks import TaskSpec, get_task, squad_features
from model.tasks.encode import encode_glue, encode_race
from model.tasks.glue import LABELS, read_glue
from model.tasks.metrics import glue_metrics, race_accuracy, squad_v1_scores, squad_v2_scores
from model.tasks.race import read_race
from model.tasks.squad import read_squad

logger = logging.getLogger(__name__)

# Table 14 of the ALBERT paper: lr, batch size, classifier dropout, train steps, warmup, max length.
TABLE_14: dict[str, tuple[float, int, float, int, int, int]] = {
    "cola": (1e-5, 16, 0.0, 5336, 320, 512),
    "stsb": (5e-5, 16, 0.0, 3598, 214, 512),
    "sst2": (1e-5, 32, 0.0, 20935, 1256, 512),
    "mnli": (3e-5, 128, 0.0, 10000, 1000, 512),
    "qnli": (1e-5, 32, 0.0, 33112, 1986, 512),
    "qqp": (5e-5, 128, 0.1, 14000, 1000, 512),
    "rte": (3e-5, 32, 0.1, 800, 200, 512),
    "mrpc": (2e-5, 32, 0.0, 800, 200, 512),
    "wnli": (2e-5, 16, 0.1, 2000, 250, 512),
    "squad1": (5e-5, 48, 0.0, 3649, 365, 384),
    "squad2": (3e-5, 48, 0.0, 8144, 814, 512),
    "race": (1e-5, 32, 0.1, 12000, 1000, 512),
}


class FinetuneConfig(StageConfig):
    task: str = Field(
        description="cola, sst2, mrpc, stsb, qqp, mnli, qnli, rte, wnli, squad1, squad2, race"
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
    learning_rate: float | None = Field(None, gt=0, description="peak learning rate (Table 14)")
    batch_size: int | None = Field(None, gt=0, description="batch size (Table 14)")
    classifier_dropout: float | None = Field(
        None, ge=0, lt=1, description="head dropout (Table 14)"
    )
    train_steps: int | None = Field(None, gt=0, description="training steps (Table 14)")
    warmup_steps: int | None = Field(None, ge=0, description="linear warmup steps (Table 14)")
    max_seq_length: int | None = Field(None, gt=8, description="sequence length (Table 14)")
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


def hyperparameters(config: FinetuneConfig, spec: TaskSpec) -> dict[str, Any]:
    lr, batch, dropout, steps, warmup, length = TABLE_14[spec.name]
    return {
        "learning_rate": config.learning_rate or lr,
        "batch_size": config.batch_size or batch,
        "classifier_dropout": dropout
        if config.classifier_dropout is None
        else config.classifier_dropout,
        "train_steps": config.train_steps or steps,
        "warmup_steps": warmup if config.warmup_steps is None else config.warmup_steps,
        "max_seq_length": config.max_seq_length or length,
    }


# ------------------------------------------------------------------------------------------ model


@keras.saving.register_keras_serializable(package="albert")
class FinetuneModel(keras.Model):
    """The backbone with one task head: classification/regression logits, SQuAD start/end logits, or
    multiple-choice scores over inputs `[B, C, T]`."""

    def __init__(
        self,
        backbone: AlbertBackbone,
        kind: str,
        num_labels: int,
        features: Features = "pooled",
        dropout: float = 0.1,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.backbone, self.kind, self.num_labels = backbone, kind, num_labels
        self.features, self.dropout = features, dropout
        size = feature_size(
            features, backbone.config.hidden_size, backbone.config.num_hidden_layers
        )
        head_config = backbone.config.model_copy(
            update={"classifier_dropout_prob": dropout, "hidden_size": size}
        )
        self.pool = LayerFeatures(features, name="features")
        if kind == "span":
            self.head = SpanExtractionHead(backbone.config, name="span_head")
        elif kind == "multiple_choice":
            self.head = MultipleChoiceHead(head_config, name="choice_head")
        else:
            self.head = SequenceClassificationHead(head_config, num_labels, name="classifier_head")
        self.head.build()
        backbone.pooler.trainable = kind != "span" and features == "pooled"

    def build(self, input_shape=None):  # every weight is created in __init__
        self.built = True

    def call(self, inputs, training=False):
        shape = keras.ops.shape(inputs["input_ids"])
        if self.kind == "multiple_choice":
            inputs = {k: keras.ops.reshape(v, (-1, shape[-1])) for k, v in inputs.items()}
        outputs = self.backbone(
            inputs, training=training, output_hidden_states=needs_hidden_states(self.features)
        )
        if self.kind == "span":
            return self.head(outputs["sequence_output"], inputs["input_mask"])
        pooled = self.pool(outputs, inputs["input_mask"])
        if self.kind == "multiple_choice":
            return self.head(pooled, num_choices=shape[1], training=training)
        return self.head(pooled, training=training)

    def get_config(self):
        return {
            "backbone": keras.saving.serialize_keras_object(self.backbone),
            "kind": self.kind,
            "num_labels": self.num_labels,
            "features": self.features,
            "dropout": self.dropout,
            "name": self.name,
        }

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        config["backbone"] = keras.saving.deserialize_keras_object(config["backbone"])
        return cls(**config)


def load_backbone(init: str, tokenizer: AlbertTokenizer, preset: str) -> AlbertBackbone:
    """The pretrained backbone at `init`, or a randomly initialised `preset` when init is 'random'."""
    if init == "random":
        return AlbertBackbone(get_preset(preset, vocab_size=tokenizer.vocab_size), name="albert")
    try:
        from model.convert import load_pretrained
    except ImportError:  # model.convert not built: .keras files only

        def load_pretrained(path):
            return keras.saving.load_model(path, compile=False)

    if not exists(init):
        raise StageError(f"{init}: pretrained model not found")
    with naming(init):  # e.g. Keras refusing an unsafe .keras file
        model = load_pretrained(init)
    backbone = model if isinstance(model, AlbertBackbone) else model.backbone
    if backbone.config.vocab_size != tokenizer.vocab_size:
        raise StageError(
            f"{init}: vocabulary of {backbone.config.vocab_size} pieces, but the SentencePiece "
            f"model {tokenizer.model_file} has {tokenizer.vocab_size}"
        )
    return backbone


def make_optimizer(
    model: keras.Model, hp: dict, weight_decay: float, layer_decay: float, steps: int
):
    schedule = WarmupPolynomialDecay(hp["learning_rate"], min(hp["warmup_steps"], steps), steps)
    multipliers = {}
    if layer_decay < 1.0:
        paths = [v.path for v in model.trainable_variables]
        multipliers = layerwise_multipliers(model.backbone.config, paths, layer_decay)
    optimizer = LayerwiseAdamW(
        multipliers,
        learning_rate=schedule,
        weight_decay=weight_decay,
        epsilon=1e-6,
        global_clipnorm=1.0,
    )
    optimizer.exclude_from_weight_decay(var_names=list(DEFAULT_EXCLUDE))
    return optimizer


def task_loss(kind: str):
    if kind == "span":
        sce = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
        return {"start_logits": sce, "end_logits": sce}
    if kind == "regression":
        return lambda y, p: keras.ops.square(
            keras.ops.cast(keras.ops.reshape(y, (-1,)), "float32") - p[:, 0]
        )
    return keras.losses.SparseCategoricalCrossentropy(from_logits=True)


# ------------------------------------------------------------------------------------------- data


class TaskData:
    """A task's encoded training and dev data and how to score dev predictions."""

    def __init__(
        self,
        spec: TaskSpec,
        config: FinetuneConfig,
        tokenizer: AlbertTokenizer,
        hp: dict,
        with_train: bool = True,
        threshold: float | None = None,
    ):
        """`with_train=False` reads only the dev data (scoring a fine-tuned model, whose SQuAD v2
        null threshold is then `threshold`)."""
        self.spec, self.config, self.tokenizer, self.hp = spec, config, tokenizer, hp
        self.with_train, self.threshold = with_train, threshold
        self.counts: dict[str, dict[str, int]] = {"train": {}, "dev": {}}
        train_path = config.train_file or join(config.data_dir, spec.train_file)
        dev_path = config.dev_file or join(config.data_dir, spec.dev_files[0])
        self.train_path, self.dev_path = train_path, dev_path
        if spec.kind == "span":
            self._load_squad()
        elif spec.kind == "multiple_choice":
            self._load_race()
        else:
            self._load_glue()
        if with_train:
            self._require_examples(train_path, "train", len(self.train["input_ids"]))
        self._require_examples(dev_path, "dev", len(self.dev_examples))

    def _require_examples(self, path: str, split: str, count: int) -> None:
        """No examples to train on or score is an error, found before any training."""
        if count:
            return
        counts = self.counts.get(split, {})
        skipped = sum(n for name, n in counts.items() if name.startswith("skipped"))
        if skipped:
            why = f"all {skipped} rows were malformed and skipped"
        elif counts.get("questions"):
            why = f"none of its {counts['questions']} questions could be used"
        elif self.spec.kind in ("span", "multiple_choice"):
            why = "it holds no questions"
        else:
            why = "the file is empty or has only a header"
        raise StageError(f"{path}: no {split} examples ({why})")

    def _limit(self, examples, limit):
        return examples[:limit] if limit else examples

    def _load_glue(self):
        c, hp, name = self.config, self.hp, self.spec.name
        train = (
            self._limit(
                list(read_glue(name, self.train_path, "train", c.on_error, self.counts["train"])),
                c.max_train_examples,
            )
            if self.with_train
            else []
        )
        dev_split = self.dev_path.rsplit("/", 1)[-1].split(".")[0]
        self.dev_examples = self._limit(
            list(read_glue(name, self.dev_path, dev_split, c.on_error, self.counts["dev"])),
            c.max_dev_examples,
        )
        self.train_texts = [[e.text_a, e.text_b] for e in train]
        encode = lambda ex: encode_glue(
            self.tokenizer, ex, hp["max_seq_length"], c.truncation, c.head_tokens
        )
        self.train, self.dev = encode(train), encode(self.dev_examples)

    def _load_race(self):
        c, hp = self.config, self.hp
        train = (
            self._limit(list(read_race(self.train_path)), c.max_train_examples)
            if self.with_train
            else []
        )
        self.dev_examples = self._limit(list(read_race(self.dev_path)), c.max_dev_examples)
        self.train_texts = [e.article.split("\n") for e in {e.article: e for e in train}.values()]
        encode = lambda ex: encode_race(
            self.tokenizer, ex, hp["max_seq_length"], c.truncation, c.head_tokens
        )
        self.train, self.dev = encode(train), encode(self.dev_examples)

    def _load_squad(self):
        c, hp = self.config, self.hp
        if c.max_query_length + 3 >= hp["max_seq_length"]:
            raise StageError(
                f"max_query_length {c.max_query_length} leaves no room for the context "
                f"in max_seq_length {hp['max_seq_length']}"
            )
        window = {
            "max_seq_length": hp["max_seq_length"],
            "doc_stride": c.doc_stride,
            "max_query_length": c.max_query_length,
        }
        examples = (
            self._limit(
                list(read_squad(self.train_path, self.counts["train"])), c.max_train_examples
            )
            if self.with_train
            else []
        )
        self.v2 = self.spec.name == "squad2"
        holdout = []
        if self.v2:  # articles held out of training to tune the no-answer threshold on
            cut = int(c.threshold_holdout * 10_000)
            held = lambda e: stable_hash(f"{c.seed}:{e.title or e.qas_id}".encode()) % 10_000 < cut
            holdout = [e for e in examples if held(e)]
            examples = [e for e in examples if not held(e)]
        self.train_texts = [[context] for context in dict.fromkeys(e.context for e in examples)]
        _, train_features = squad_features.prepare(
            self.tokenizer, examples, True, counts=self.counts["train"], **window
        )
        self.train = squad_features.features_to_arrays(train_features)
        self.train["labels"] = {
            "start_logits": self.train.pop("start_positions"),
            "end_logits": self.train.pop("end_positions"),
        }
        dev_examples = self._limit(
            list(read_squad(self.dev_path, self.counts["dev"])), c.max_dev_examples
        )
        self.dev_examples = dev_examples
        self.dev_aligned, self.dev_features = squad_features.prepare(
            self.tokenizer, dev_examples, False, counts=self.counts["dev"], **window
        )
        self.dev = squad_features.features_to_arrays(self.dev_features)
        self.holdout = None
        if holdout:
            self.counts["holdout"] = {}
            aligned, features = squad_features.prepare(
                self.tokenizer, holdout, False, counts=self.counts["holdout"], **window
            )
            self.holdout = (holdout, aligned, features, squad_features.features_to_arrays(features))

    # -- scoring

    def score(self, model: keras.Model, batch_size: int) -> tuple[dict[str, float], Any]:
        """Dev metrics (and the raw predictions) of `model`."""
        kind = self.spec.kind
        outputs = model.predict(inputs_of(self.dev), batch_size=batch_size, verbose=0)
        if kind == "span":
            return self._score_squad(model, outputs, batch_size)
        if kind == "regression":
            predictions = outputs[:, 0]
            return glue_metrics(self.spec.name, predictions, self.dev["labels"]), predictions
        predictions = np.argmax(outputs, axis=-1)
        if kind == "multiple_choice":
            levels = [e.level for e in self.dev_examples]
            return race_accuracy(levels, predictions, self.dev["labels"]), predictions
        return glue_metrics(self.spec.name, predictions, self.dev["labels"]), predictions

    def _decode(self, aligned, features, outputs):
        return squad_features.decode(
            aligned,
            features,
            outputs["start_logits"],
            outputs["end_logits"],
            self.config.n_best_size,
            self.config.max_answer_length,
        )

    def _score_squad(self, model, outputs, batch_size):
        decoded = self._decode(self.dev_aligned, self.dev_features, outputs)
        gold = {
            e.qas_id: [] if e.is_impossible else [a.text for a in e.answers]
            for e in self.dev_examples
        }
        if not self.v2:
            scores = squad_v1_scores(gold, decoded.final(None))
            return {**scores, "exact": scores["exact_match"]}, (decoded, None)
        threshold = self.threshold or 0.0
        if self.holdout is not None:
            examples, aligned, features, arrays = self.holdout
            held_outputs = model.predict(inputs_of(arrays), batch_size=batch_size, verbose=0)
            held = self._decode(aligned, features, held_outputs)
            held_gold = {
                e.qas_id: [] if e.is_impossible else [a.text for a in e.answers] for e in examples
            }
            threshold = squad_v2_scores(held_gold, held.answers, held.null_score_diff)[
                "best_f1_thresh"
            ]
        scores = squad_v2_scores(gold, decoded.answers, decoded.null_score_diff, threshold)
        scores["threshold_tuned_on_train_holdout"] = threshold
        return scores, (decoded, threshold)


def inputs_of(arrays: dict) -> dict[str, np.ndarray]:
    return {k: arrays[k] for k in ("input_ids", "segment_ids", "input_mask")}


class DevEvaluation(keras.callbacks.Callback):
    """Scores the dev set at every epoch end into `logs["dev_<metric>"]`; keeps the best weights and
    restores them when training ends."""

    def __init__(self, data: TaskData, batch_size: int, steps_per_epoch: int):
        super().__init__()
        self.data, self.batch_size, self.steps_per_epoch = data, batch_size, steps_per_epoch
        self.metric = data.spec.primary_metric
        self.history: list[dict] = []
        self.best, self.best_weights, self.best_step = -math.inf, None, 0

    def on_epoch_end(self, epoch, logs=None):
        metrics, _ = self.data.score(self.model, self.batch_size)
        step = (epoch + 1) * self.steps_per_epoch
        value = float(metrics[self.metric])
        self.history.append(
            {"step": step, "loss": float((logs or {}).get("loss", math.nan)), **metrics}
        )
        logger.info("step %d: dev %s = %.4f", step, self.metric, value)
        if logs is not None:
            logs[f"dev_{self.metric}"] = value
        if value > self.best:
            self.best, self.best_step, self.best_weights = value, step, self.model.get_weights()

    def on_train_end(self, logs=None):
        if self.best_weights is not None:
            self.model.set_weights(self.best_weights)


def fit(model: FinetuneModel, data: TaskData, hp: dict, config: FinetuneConfig) -> DevEvaluation:
    """Keras fit with warmup + linear decay AdamW and early stopping on the dev metric."""
    steps, batch = hp["train_steps"], hp["batch_size"]
    per_epoch = max(1, math.ceil(len(data.train["input_ids"]) / batch))
    eval_every = min(config.eval_every or per_epoch, steps)
    model.compile(
        optimizer=make_optimizer(model, hp, config.weight_decay, config.layer_decay, steps),
        loss=task_loss(data.spec.kind),
    )
    evaluation = DevEvaluation(data, batch, eval_every)
    stopping = keras.callbacks.EarlyStopping(
        monitor=f"dev_{evaluation.metric}", mode="max", patience=config.patience
    )
    batches = train_batches((inputs_of(data.train), data.train["labels"]), batch, config.seed)
    model.fit(
        batches,
        steps_per_epoch=eval_every,
        epochs=math.ceil(steps / eval_every),
        callbacks=[evaluation, stopping],
        shuffle=False,
        verbose=config.verbose_fit,
    )
    return evaluation


# ---------------------------------------------------------------------- multi-task (Sun et al. 5.4)


@keras.saving.register_keras_serializable(package="albert")
class MultiTaskModel(keras.Model):
    """One shared backbone, one classification/regression head per task: `{task: logits}`."""

    def __init__(
        self,
        backbone: AlbertBackbone,
        tasks: dict[str, int],
        features: Features = "pooled",
        dropout: float = 0.1,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.backbone, self.tasks = backbone, dict(tasks)
        self.singles = {
            name: FinetuneModel(
                backbone, "classification", labels, features, dropout, name=f"task_{name}"
            )
            for name, labels in self.tasks.items()
        }

    def build(self, input_shape=None):
        self.built = True

    def call(self, inputs, training=False):
        outputs = self.backbone(
            inputs,
            training=training,
            output_hidden_states=needs_hidden_states(next(iter(self.singles.values())).features),
        )
        result = {}
        for name, single in self.singles.items():
            pooled = single.pool(outputs, inputs["input_mask"])
            result[name] = single.head(pooled, training=training)
        return result


def multitask_entries(config: FinetuneConfig) -> dict[str, str]:
    """`{task: data_dir}` of the main task and every `--multitask TASK=DIR`."""
    entries = {get_task(config.task).name: config.data_dir}
    for item in config.multitask:
        name, sep, directory = item.partition("=")
        if not sep or not directory:
            raise StageError(f"--multitask {item!r}: expected TASK=DIR")
        try:
            spec = get_task(name)
        except KeyError as error:
            raise StageError(str(error.args[0])) from None
        if spec.kind not in ("classification", "regression"):
            raise StageError(f"--multitask {name}: only GLUE tasks can be trained jointly")
        entries[spec.name] = directory
    return entries


def train_multitask(
    backbone: AlbertBackbone, config: FinetuneConfig, tokenizer: AlbertTokenizer, hp: dict
) -> tuple[dict, MultiTaskModel]:
    """Train the shared backbone on all tasks at once (batches mix tasks in proportion to their
    sizes; each example's loss counts only for its own task's head). Returns dev metrics per task."""
    datas = {}
    for name, directory in multitask_entries(config).items():
        task_config = config.model_copy(
            update={
                "task": name,
                "data_dir": directory,
                "train_file": None,
                "dev_file": None,
                "multitask": [],
            }
        )
        datas[name] = TaskData(get_task(name), task_config, tokenizer, hp)
    model = MultiTaskModel(
        backbone,
        {n: d.spec.num_labels for n, d in datas.items()},
        config.features,
        hp["classifier_dropout"],
        name="multitask",
    )

    def zero_label(data):
        return 0.0 if data.spec.kind == "regression" else 0

    parts = []
    for name, data in datas.items():
        count = len(data.train["input_ids"])
        labels = {
            n: (
                data.train["labels"]
                if n == name
                else np.full(count, zero_label(d), dtype=d.train["labels"].dtype)
            )
            for n, d in datas.items()
        }
        weights = {n: np.full(count, float(n == name), dtype=np.float32) for n in datas}
        parts.append((inputs_of(data.train), labels, weights))
    steps = config.multitask_steps or hp["train_steps"]
    model.compile(
        optimizer=make_optimizer(model, hp, config.weight_decay, config.layer_decay, steps),
        loss={n: task_loss(d.spec.kind) for n, d in datas.items()},
    )
    model.fit(
        mixture_batches(parts, hp["batch_size"], config.seed),
        steps_per_epoch=steps,
        epochs=1,
        shuffle=False,
        verbose=config.verbose_fit,
    )
    metrics = {
        name: data.score(model.singles[name], hp["batch_size"])[0] for name, data in datas.items()
    }
    return {"steps": steps, "tasks": sorted(datas), "dev_after_multitask": metrics}, model


# ------------------------------------------------------------------ further pretraining (Sun 5.3)


def task_corpus(data: TaskData, path: str) -> int:
    """Write the task's training text as a segmented corpus (a sentence or text per line, a blank
    line between documents) for `pipelines.tfrecords`; return the number of documents."""
    documents = 0
    with open_file(path, "w") as handle:
        for text in data.train_texts:
            lines = [line.strip() for line in text if line and line.strip()]
            if lines:
                handle.write("\n".join(lines) + "\n\n")
                documents += 1
    return documents


def further_pretrain(config: FinetuneConfig, data: TaskData, hp: dict) -> dict:
    """Continue pretraining `config.init` on the task's own text with `model.pretrain`; the result's
    `init` is the further-pretrained model to fine-tune. The work directory is OUTPUT.further/."""
    from model.pretrain import PretrainConfig
    from model.pretrain import run as pretrain
    from pipelines.tfrecords import TFRecordsConfig
    from pipelines.tfrecords import run as make_tfrecords

    work = config.output.rstrip("/") + ".further"
    corpus_dir, records, run_dir = (join(work, p) for p in ("corpus", "tfrecords", "pretrain"))
    makedirs(corpus_dir)
    documents = task_corpus(data, join(corpus_dir, "task.txt"))
    length = min(hp["max_seq_length"], 128)
    make_tfrecords(
        TFRecordsConfig(
            input=corpus_dir,
            spm_model=config.spm_model,
            output=records,
            max_seq_length=length,
            max_predictions_per_seq=max(2, length * 20 // 128),
            dupe_factor=5,
            seed=config.seed,
            num_shards=1,
        )
    )
    summary = pretrain(
        PretrainConfig(
            data=records,
            output=run_dir,
            preset=config.preset,
            spm_model=config.spm_model,
            init=None if config.init == "random" else config.init,
            steps=config.further_pretrain_steps,
            batch_size=min(32, hp["batch_size"]),
            learning_rate=5e-5,
            warmup_steps=config.further_pretrain_steps // 10,
            optimizer="adamw",
            seed=config.seed,
            eval_every=0,
            eval_batches=2,
            checkpoint_every=config.further_pretrain_steps,
            progress=False,
            jit_compile=False,
        )
    )
    return {
        "documents": documents,
        "steps": config.further_pretrain_steps,
        "init": summary["export"]["keras"],
        "pretrain": {k: v for k, v in summary.items() if k != "export"},
    }


# ------------------------------------------------------------------------------------ predictions


def write_predictions(directory: str, data: TaskData, predictions: Any) -> str:
    kind = data.spec.kind
    if kind == "span":
        decoded, threshold = predictions
        path = join(directory, "predictions.json")
        with open_file(path, "w") as handle:
            json.dump(decoded.final(threshold), handle, indent=1, sort_keys=True)
        with open_file(join(directory, "null_odds.json"), "w") as handle:
            json.dump(decoded.null_score_diff, handle, indent=1, sort_keys=True)
        return path
    if kind == "multiple_choice":
        path = join(directory, "predictions.jsonl")
        with open_file(path, "w") as handle:
            for example, prediction in zip(data.dev_examples, predictions):
                handle.write(
                    json.dumps({"id": example.example_id, "answer": "ABCD"[int(prediction)]}) + "\n"
                )
        return path
    path = join(directory, "predictions.tsv")
    labels = LABELS[data.spec.name]
    with open_file(path, "w") as handle:
        handle.write("index\tprediction\n")
        for example, prediction in zip(data.dev_examples, predictions):
            value = f"{float(prediction):.6f}" if labels is None else labels[int(prediction)]
            handle.write(f"{example.guid}\t{value}\n")
    return path


# -------------------------------------------------------------------------------------------- run


def run(config: FinetuneConfig) -> dict:
    """Fine-tune, score the dev set, write results, predictions and the model; return the results."""
    try:
        spec = get_task(config.task)
    except KeyError as error:
        raise StageError(str(error.args[0])) from None
    keras.utils.set_random_seed(config.seed)
    tokenizer = AlbertTokenizer(config.spm_model)
    hp = hyperparameters(config, spec)
    init = config.init
    data = TaskData(
        spec, config, tokenizer, hp
    )  # raises if the train or dev file holds no examples
    further = further_pretrain(config, data, hp) if config.further_pretrain_steps else None
    if further:
        init = further["init"]
    backbone = load_backbone(init, tokenizer, config.preset)
    multitask = None
    model = FinetuneModel(
        backbone,
        spec.kind,
        spec.num_labels,
        config.features,
        hp["classifier_dropout"],
        name="finetune",
    )
    if config.multitask:
        if spec.kind not in ("classification", "regression"):
            raise StageError(
                f"--multitask: only GLUE tasks can be trained jointly, not {spec.name}"
            )
        multitask, joint = train_multitask(backbone, config, tokenizer, hp)
        model.head.set_weights(joint.singles[spec.name].head.get_weights())
    evaluation = fit(model, data, hp, config)
    metrics, predictions = data.score(model, hp["batch_size"])
    with atomic_output_dir(config.output) as out:
        predictions_path = write_predictions(out, data, predictions)
        model.save(join(out, "model.keras"))
        results = {
            "task": spec.name,
            "init": init,
            "dev_file": data.dev_path,
            "dev": metrics,
            "primary_metric": spec.primary_metric,
            "best_step": evaluation.best_step,
            "history": evaluation.history,
            "hyperparameters": hp,
            "counts": data.counts,
            "multitask": multitask,
            "further_pretraining": further,
            "config": config.model_dump(),
            "predictions": predictions_path.replace(out, config.output.rstrip("/")),
        }
        with open_file(join(out, "results.json"), "w") as handle:
            json.dump(results, handle, indent=2, sort_keys=True, default=str)
    return {
        "task": spec.name,
        "dev": metrics,
        "best_step": evaluation.best_step,
        "output": config.output,
    }


def main(argv=None, prog="python -m model.finetune") -> int:
    return stage_main(FinetuneConfig, run, argv, prog=prog, description=__doc__)


if __name__ == "__main__":
    sys.exit(main())
