"""Training with Keras `fit`: warmup + linear decay AdamW, the dev metric computed every
`eval_every` steps, early stopping after `patience` evaluations without improvement and the best
weights kept; progress lines (`model.finetune.progress`); checkpoints every `checkpoint_every`
steps and at a signal, and an exact resume from them.

`train_steps` runs `fit` in segments whose epochs end at the evaluations: from step 0 one `fit` of
`eval_every`-step epochs (and one more for a last, shorter interval), from a resumed step first the
rest of its interval. Each segment's batches start where the steps before it ended
(`train_batches(..., skip=step)`), so a resumed run trains on the batches the uninterrupted one
would have, from the same weights, optimizer variables, dropout seed states, evaluation history,
early-stopping count and interval loss (the loss tracker's sums): its weights, metrics and
predictions are the uninterrupted run's.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable

import keras
import numpy as np

from albert.errors import Interrupted, StageError
from model.checkpoints import store as checkpointing
from model.checkpoints.divergence import diverged, weights_finite
from model.checkpoints.manager import Checkpoints
from model.finetune.batches import train_batches
from model.finetune.config import FinetuneConfig, Hyperparameters
from model.finetune.kind import TaskData, TaskKind, inputs_of
from model.finetune.models import FinetuneModel
from model.finetune.optimizer import make_optimizer
from model.finetune.progress import Progress

logger = logging.getLogger(__name__)


class DevEvaluation(keras.callbacks.Callback):
    """Scores the dev set at each evaluation (`loop.evaluation_due`) into `logs["dev_<metric>"]`;
    keeps the best weights and their scores (`best_scores`: the task kind's `score`, metrics and
    predictions, so the restored model is not scored again) and stops training after `patience`
    evaluations without improvement (Keras `EarlyStopping`'s rule). `restore_best` puts the best
    weights back. Its state travels in the checkpoints (`state`, `arrays`, `restore`)."""

    def __init__(self, kind: TaskKind, data: TaskData, batch_size: int, patience: int):
        super().__init__()
        self.kind, self.data, self.batch_size, self.patience = kind, data, batch_size, patience
        self.metric = kind.spec.primary_metric
        self.history: list[dict] = []
        self.best, self.best_weights, self.best_step = -math.inf, None, 0
        self.best_scores = None
        self.wait, self.stopped = 0, False
        self.loop: TrainingLoop | None = None

    def on_epoch_end(self, epoch, logs=None):
        if not self.loop.evaluation_due():
            return
        model, step = self.model, self.loop.step
        scores = self.kind.score(model, self.data, self.batch_size)
        metrics = scores[0]
        value = float(metrics[self.metric])
        self.history.append(
            {"step": step, "loss": float((logs or {}).get("loss", math.nan)), **metrics}
        )
        if logs is not None:
            logs[f"dev_{self.metric}"] = value
        if value > self.best:
            self.best, self.best_step, self.best_weights = value, step, model.get_weights()
            self.best_scores, self.wait = scores, 0
        else:
            self.wait += 1
            if self.wait >= self.patience and len(self.history) > 1:
                self.stopped = model.stop_training = True
        self.loop.progress.evaluated(step, self.metric, value, self.best, self.best_step)

    def restore_best(self, model: keras.Model) -> None:
        if self.best_weights is not None:
            model.set_weights(self.best_weights)

    def state(self) -> dict:
        return {
            "history": self.history,
            "best": self.best,
            "best_step": self.best_step,
            "wait": self.wait,
            "stopped": self.stopped,
        }

    def arrays(self) -> dict[str, np.ndarray]:
        return {f"best/{i:05d}": w for i, w in enumerate(self.best_weights or [])}

    def restore(self, state: dict, arrays: dict[str, np.ndarray]) -> None:
        """The evaluation as a checkpoint left it; the best weights' scores are computed again at
        the end (`best_scores` None), from the same weights."""
        self.history, self.best, self.best_step = (
            state["history"],
            state["best"],
            state["best_step"],
        )
        self.wait, self.stopped = state["wait"], state["stopped"]
        self.best_weights = [arrays[key] for key in sorted(arrays)] or None


class TrainingLoop(keras.callbacks.Callback):
    """Counts the steps of a phase across its `fit` segments, reports progress, writes the
    checkpoints that fall due (at an evaluation's step, after it) and stops after a checkpoint
    when a signal came (`checkpoints.reached_preemption`); `save(step)` writes one."""

    def __init__(
        self,
        total: int,
        start: int,
        eval_every: int,
        progress: Progress,
        checkpoints: Checkpoints,
        save: Callable[[int], str | None],
        loss_sums: list[np.ndarray] | None = None,
    ):
        super().__init__()
        self.total, self.step, self.eval_every = total, start, eval_every
        self.progress, self.checkpoints, self.save = progress, checkpoints, save
        # the loss tracker of an interval a checkpoint interrupted, restored at its first step
        self.loss_sums = loss_sums if start % eval_every else None
        self.saved: tuple[int, str | None] | None = None
        self.stopped_at: int | None = None
        self.stop_training = False

    def evaluation_due(self) -> bool:
        """Is the step just taken an evaluation's (an interval's end)? Not after a stop for a
        signal between two evaluations."""
        at_end = self.step % self.eval_every == 0 or self.step == self.total
        return at_end and self.stopped_at is None

    def on_train_begin(self, logs=None):
        self.checkpoints.training_started()

    def on_epoch_begin(self, epoch, logs=None):
        if self.loss_sums is not None:  # after `fit` reset them, before its first step reads them
            for variable, value in zip(loss_variables(self._model), self.loss_sums):
                variable.assign(value)
            self.loss_sums = None

    def on_train_batch_end(self, batch, logs=None):
        self.step += 1
        loss = (logs or {}).get("loss", math.nan)
        self.progress.step(self.step, lambda: float(loss))
        if self.step % self.eval_every and self.step < self.total:
            self.checkpoint_or_stop()  # at an evaluation's step, after it (`on_epoch_end`)

    def on_epoch_end(self, epoch, logs=None):
        if self.stopped_at is None and self.step < self.total:
            self.checkpoint_or_stop()

    def checkpoint_or_stop(self) -> None:
        """The checkpoint due at this step; with a signal, a checkpoint and the end of `fit`."""
        if self._model.stop_training:  # early stopping: the final checkpoint follows
            return
        if self.checkpoints.should_save(self.step):
            self.saved = (self.step, self.save_now())
        self.checkpoints.raise_if_failed()
        if self.checkpoints.reached_preemption(self.step):
            if self.saved is None or self.saved[0] != self.step:
                self.saved = (self.step, self.save_now())
            self.stopped_at = self.step
            self._model.stop_training = self.stop_training = True

    def save_now(self) -> str | None:
        """`save` this step, the model's variables read back first (on JAX `fit` holds them
        apart between epochs: the `model` property puts them back)."""
        self.model  # noqa: B018  (the property syncs JAX's training state into the variables)
        return self.save(self.step)

    def interrupt(self) -> None:
        """After a `fit` that a signal stopped: `Interrupted` naming the committed checkpoint."""
        self.checkpoints.wait()
        raise Interrupted(
            f"{self.checkpoints.signal_name} at step {self.stopped_at}: saved {self.saved[1]}"
        )


class DivergenceGuard(keras.callbacks.Callback):
    """Stops `fit` with `Phase.diverged` at an interval's end whose training loss is not finite,
    before its evaluation or checkpoint (every checkpoint checks the weights: `Phase.save`)."""

    def __init__(self, phase: Phase, loop: TrainingLoop):
        super().__init__()
        self.phase, self.loop = phase, loop

    def on_epoch_end(self, epoch, logs=None):
        if not math.isfinite(float((logs or {}).get("loss", 0.0))):
            raise self.phase.diverged(self.loop.step, "training loss")


def compile_for_fit(model: keras.Model, optimizer: keras.optimizers.Optimizer, loss) -> None:
    """`model.compile(optimizer, loss)` with the optimizer's variables made now: Keras on TensorFlow
    otherwise makes them while tracing `fit`'s step, and tf.function traces a step that creates
    variables twice (a quarter of a short fine-tuning's CPU time)."""
    model.compile(optimizer=optimizer, loss=loss)
    model.optimizer.build(model.trainable_variables)


def segments(start: int, total: int, every: int) -> list[tuple[int, int, int]]:
    """(first step, steps per epoch, epochs) of the `fit` calls from step `start` to `total`, every
    epoch ending at a multiple of `every` or at `total` (see the module docstring)."""
    parts, step = [], start
    if step % every and step < total:
        steps = min(every - step % every, total - step)
        parts.append((step, steps, 1))
        step += steps
    if (total - step) // every:
        parts.append((step, every, (total - step) // every))
        step += every * ((total - step) // every)
    if step < total:
        parts.append((step, total - step, 1))
    return parts


def train_steps(
    model: keras.Model,
    batches: Callable[[int], object],
    loop: TrainingLoop,
    callbacks: list,
    verbose: int,
) -> None:
    """`fit` `model` from `loop.step` to `loop.total` on `batches(skip)` (the batches after `skip`
    steps) in `segments`; `Interrupted` after the checkpoint of a signal."""
    for first, steps, epochs in segments(loop.step, loop.total, loop.eval_every):
        model.fit(
            batches(first),
            steps_per_epoch=steps,
            epochs=epochs,
            callbacks=[*callbacks, loop],
            shuffle=False,
            verbose=verbose,
        )
        if loop.stop_training:
            loop.interrupt()
        if model.stop_training:  # early stopping
            return


def loss_variables(model: keras.Model) -> list:
    """The variables of `fit`'s loss tracker (the `loss` of its logs: a total and a count)."""
    return [v for metric in model.metrics if metric.name == "loss" for v in metric.variables]


def loss_sums(model: keras.Model) -> list[np.ndarray]:
    """The loss tracker's sums now (the interval's training loss so far)."""
    return [np.asarray(keras.ops.convert_to_numpy(v.value)) for v in loss_variables(model)]


class Phase:
    """One training phase of the run writing `output`, with its checkpoints (`checkpoints`,
    `OUTPUT.checkpoints/PHASE`): `state` (JSON) and `extra_arrays` are what the caller adds to each
    checkpoint; `resume` restores one into the model and optimizer and returns its state. Weights
    that are not finite are never saved: `diverged`, naming `lr` (the run's --learning-rate)."""

    def __init__(
        self, model: keras.Model, checkpoints: Checkpoints, identity: dict, output: str, lr: float
    ):
        self.model, self.checkpoints, self.identity = model, checkpoints, identity
        self.output, self.settings = output, f"--learning-rate {lr}"
        self.state: Callable[[], dict] = dict
        self.extra_arrays: Callable[[], dict] = dict

    def diverged(self, step: int, what: str) -> StageError:
        """The error that stops the phase: `what` became non-finite at `step` (named once the
        checkpoint being written is committed: the last finite one)."""
        self.checkpoints.wait()
        return diverged(self.output, self.checkpoints.directory, step, what, self.settings)

    def save(self, step: int, done: bool = False) -> str | None:
        model = self.model
        if not weights_finite(model):
            raise self.diverged(step, "model weights")
        arrays = checkpointing.snapshot(model, model.optimizer)
        arrays.update({f"loss/{i:05d}": a for i, a in enumerate(loss_sums(model))})
        arrays.update(self.extra_arrays())
        record = {**self.state(), "identity": self.identity, "done": done}
        return self.checkpoints.save(step, arrays, record)

    def resume(self, path: str) -> tuple[dict, dict]:
        """(state, array groups) of the checkpoint at `path`, its weights, optimizer variables and
        dropout seed states restored."""
        state = checkpointing.load_checkpoint(path, self.model, self.model.optimizer)
        logger.info("resuming from %s (step %d)", path, state["step"])
        return state, checkpointing.read_groups(path)


def fit(
    model: FinetuneModel,
    kind: TaskKind,
    data: TaskData,
    hp: Hyperparameters,
    config: FinetuneConfig,
    checkpoints: Checkpoints,
    identity: dict,
    resume_from: str | None = None,
    state: Callable[[], dict] = dict,
    accelerator: bool = False,
    batches: Callable[[int], object] | None = None,
) -> DevEvaluation:
    """Train `model` on `data` (see the module docstring), from the checkpoint `resume_from` when
    given; the best weights restored at the end, after the final checkpoint (state `done`);
    returns the evaluation. `state()` is the caller's part of each checkpoint's state;
    `batches(skip)` the training batches after `skip` steps (default: `data.train`'s, shuffled
    with the seed; `albert distill` adds the teacher's outputs)."""
    steps, batch = hp.train_steps, hp.batch_size
    per_epoch = max(1, math.ceil(len(data.train["input_ids"]) / batch))
    eval_every = min(config.eval_every or per_epoch, steps)
    compile_for_fit(
        model,
        make_optimizer(model, hp, config.weight_decay, config.layer_decay, steps, config.schedule),
        kind.loss(),
    )
    evaluation = DevEvaluation(kind, data, batch, config.patience)
    phase = Phase(model, checkpoints, identity, config.output, hp.learning_rate)
    start, sums, done = 0, None, False
    if resume_from is not None:
        saved, groups = phase.resume(resume_from)
        evaluation.restore(saved["evaluation"], groups.get("best", {}))
        start, done = saved["step"], saved["done"]
        sums = [groups["loss"][key] for key in sorted(groups.get("loss", {}))]
    progress = Progress(
        kind.spec.name,
        steps,
        start,
        max_seq_length=hp.max_seq_length,
        accelerator=accelerator,
        quiet=config.quiet,
    )
    loop = TrainingLoop(steps, start, eval_every, progress, checkpoints, phase.save, sums)
    evaluation.loop = loop
    phase.state = lambda: {**state(), "step": loop.step, "evaluation": evaluation.state()}
    phase.extra_arrays = evaluation.arrays
    if not done:
        progress.began()
        elements = (inputs_of(data.train), data.train["labels"])
        batches = batches or (
            lambda skip: train_batches(elements, batch, config.seed, trim=True, skip=skip)
        )
        guard = DivergenceGuard(phase, loop)
        train_steps(model, batches, loop, [guard, evaluation], config.verbose_fit)
        phase.save(loop.step, done=True)
    checkpoints.training_done()  # a signal since the last step ends the run here
    evaluation.restore_best(model)
    return evaluation
