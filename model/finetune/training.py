"""Single-task training: Keras `fit` with warmup + linear decay AdamW, the dev metric computed every
`eval_every` steps, early stopping after `patience` evaluations without improvement, and the best
weights kept."""

from __future__ import annotations

import logging
import math

import keras

from model.finetune.batches import train_batches
from model.finetune.config import FinetuneConfig, Hyperparameters
from model.finetune.kind import TaskData, TaskKind, inputs_of
from model.finetune.models import FinetuneModel
from model.finetune.optimizer import make_optimizer

logger = logging.getLogger(__name__)


class DevEvaluation(keras.callbacks.Callback):
    """Scores the dev set at every epoch end into `logs["dev_<metric>"]`; keeps the best weights,
    restores them when training ends, and keeps their scores (`best_scores`: the task kind's
    `score`, metrics and predictions), so the restored model is not scored again."""

    def __init__(self, kind: TaskKind, data: TaskData, batch_size: int, steps_per_epoch: int):
        super().__init__()
        self.kind, self.data = kind, data
        self.batch_size, self.steps_per_epoch = batch_size, steps_per_epoch
        self.metric = kind.spec.primary_metric
        self.history: list[dict] = []
        self.best, self.best_weights, self.best_step = -math.inf, None, 0
        self.best_scores = None

    def on_epoch_end(self, epoch, logs=None):
        scores = self.kind.score(self.model, self.data, self.batch_size)
        metrics = scores[0]
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
            self.best_scores = scores

    def on_train_end(self, logs=None):
        if self.best_weights is not None:
            self.model.set_weights(self.best_weights)


def compile_for_fit(model: keras.Model, optimizer: keras.optimizers.Optimizer, loss) -> None:
    """`model.compile(optimizer, loss)` with the optimizer's variables made now: Keras on TensorFlow
    otherwise makes them while tracing `fit`'s step, and tf.function traces a step that creates
    variables twice (a quarter of a short fine-tuning's CPU time)."""
    model.compile(optimizer=optimizer, loss=loss)
    model.optimizer.build(model.trainable_variables)


def fit(
    model: FinetuneModel,
    kind: TaskKind,
    data: TaskData,
    hp: Hyperparameters,
    config: FinetuneConfig,
) -> DevEvaluation:
    """Train `model` on `data` (see the module docstring); returns the evaluation history."""
    steps, batch = hp.train_steps, hp.batch_size
    per_epoch = max(1, math.ceil(len(data.train["input_ids"]) / batch))
    eval_every = min(config.eval_every or per_epoch, steps)
    compile_for_fit(
        model,
        make_optimizer(model, hp, config.weight_decay, config.layer_decay, steps, config.schedule),
        kind.loss(),
    )
    evaluation = DevEvaluation(kind, data, batch, eval_every)
    stopping = keras.callbacks.EarlyStopping(
        monitor=f"dev_{evaluation.metric}", mode="max", patience=config.patience
    )
    batches = train_batches(
        (inputs_of(data.train), data.train["labels"]), batch, config.seed, trim=True
    )
    model.fit(
        batches,
        steps_per_epoch=eval_every,
        epochs=math.ceil(steps / eval_every),
        callbacks=[evaluation, stopping],
        shuffle=False,
        verbose=config.verbose_fit,
    )
    return evaluation
