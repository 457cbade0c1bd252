"""The training position (step, epoch, batch in epoch, the metric window) and what advances it:
a step, its training record, held-out evaluations and checkpoints."""

from __future__ import annotations

import time

import numpy as np

from albert.errors import Interrupted, StageError
from model.checkpoints import store as checkpointing
from model.checkpoints.manager import Checkpoints
from model.input import source as pretrain_input
from model.input.prefetch import token_counts
from model.pretrain.config import PretrainConfig
from model.pretrain.divergence import diverged, weights_finite
from model.pretrain.run_input import PROBE_STEPS
from model.pretrain.run_log import RunLog
from model.pretrain.time_budget import TrainingClock, budget_learning_rate


class Trainer:
    """Trains `model` from the position `state` (a checkpoint's, or step 0) with a backend's steps.

    `engine` is the backend's `TfTraining` or `JaxTraining`; `log` records on the chief only;
    `checkpoints` (`model.checkpoints.manager.Checkpoints`, which the caller closes before it
    releases the output's lock) says when a checkpoint is due, writes it in the background (the
    chief only) and, asked after every step, whether every process stops there for a signal.
    `schedule` is the step schedule, or None under --time-budget: then each step's learning rate
    follows the training time (`clock`, counting on from the time the checkpoint recorded) and
    reaches the optimizer through `engine.set_learning_rate`. `step` is the one step counter (the
    checkpoints and the stop agreement are asked with it).
    """

    def __init__(
        self,
        config: PretrainConfig,
        spec,
        model,
        optimizer,
        schedule,
        engine,
        log: RunLog,
        identity: dict,
        chief: bool,
        state: dict,
        clock: TrainingClock,
        checkpoints: Checkpoints,
    ):
        # heavy: loads keras, tensorflow; this module stays importable without it
        from model.evaluation.heldout import sum_names

        self.config, self.spec, self.model, self.optimizer, self.schedule = (
            config,
            spec,
            model,
            optimizer,
            schedule,
        )
        self.engine, self.log, self.identity, self.chief = engine, log, identity, chief
        self.step, self.epoch, self.batch_in_epoch = (
            state["step"],
            state["epoch"],
            state["batch_in_epoch"],
        )
        # the training-metric window in progress (restored on resume: records match an uninterrupted
        # run)
        width = len(sum_names(config.objective))
        self.window = np.asarray(state.get("log_window", np.zeros(width)), np.float64)
        self.window_steps = int(state.get("window_steps", 0))
        self.window_start, self.timed_steps = time.perf_counter(), 0
        self.total_time, self.total_steps = 0.0, 0
        self.loop = LoopCounts()
        # the input's sizing from the step (`run_input.sizing`), asked once PROBE_STEPS are steady
        self.size_input, self.input_workers = None, None
        self.train_metrics: dict = {}
        self.eval_step = None
        self.clock = clock
        self.learning_rate = None  # the rate of the last step under --time-budget
        self.checkpoints = checkpoints
        self.saved = (self.step, None)  # (step, path) of the last save of this run

    def finished(self) -> bool:
        """True once --steps are done, or under --time-budget once the budget is spent."""
        if self.config.budget_seconds is None:
            return self.step >= self.config.steps
        return self.clock.elapsed() >= self.config.budget_seconds

    @property
    def sequences_per_second(self) -> float | None:
        return (
            self.total_steps * self.config.batch_size / self.total_time if self.total_time else None
        )

    @property
    def loop_figures(self) -> dict:
        """This run's training loop (`LoopCounts.figures`) and, when the input was sized from the
        step, the workers it was given."""
        sized = (
            {} if self.input_workers is None else {"input_workers_from_step": self.input_workers}
        )
        return self.loop.figures(self.config.batch_size) | sized

    def train(self, batches) -> None:
        """Train on `batches`, (epoch, index of the batch in its epoch, batch) from the current
        position on, until --steps are done or the time budget is spent; StageError when they end
        first (an epoch without one whole batch)."""
        config, iterator = self.config, iter(batches)
        if self.clock.started is None:
            self.clock.start()
        if self.finished():
            return
        while True:
            asked = time.perf_counter()
            item = next(iterator, None)
            if item is None:
                raise StageError(
                    f"{config.data}: fewer training records than one batch of {config.batch_size}"
                )
            self.epoch, self.batch_in_epoch, batch = item
            waited = time.perf_counter() - asked
            compilations = self.engine.compilations()
            last = self.train_step(batch)
            self.count_loop_batch(
                batch,
                waited,
                time.perf_counter() - asked,
                self.engine.compilations() > compilations or self.evaluated_or_saved(),
            )
            if self.size_input and self.loop.steady_steps == PROBE_STEPS:
                self.input_workers = self.size_input(self.loop.steady_step_seconds())
                self.size_input = None
            if last:
                return

    def evaluated_or_saved(self) -> bool:
        """Did the step just taken fall due for a held-out evaluation or a checkpoint?"""
        config, step = self.config, self.step
        return bool(config.eval_every and step % config.eval_every == 0) or (
            self.checkpoints.should_save(step)
        )

    def count_loop_batch(self, batch, waited: float, seconds: float, unsteady: bool) -> None:
        """Add a step to `loop_figures`: its wait for the input, its time from asking for its batch
        to the end of what fell due after it, its batch's tokens (numpy, eager or `Placed`); a step
        that compiled, evaluated or saved a checkpoint does not count as steady."""
        self.loop.add(waited, seconds, *token_counts(batch), steady=not unsteady)

    def train_step(self, batch) -> bool:
        """One optimizer update, then the training record, evaluation and checkpoint that fall due;
        True when it was the last (--steps done or the budget spent)."""
        config = self.config
        self.checkpoints.training_started()
        if config.budget_seconds is not None:
            self.learning_rate = budget_learning_rate(
                config.learning_rate,
                config.warmup_steps,
                config.budget_seconds,
                self.step,
                self.clock.elapsed(),
                config.decay_power,
            )
            self.engine.set_learning_rate(self.learning_rate)
        sums = np.asarray(self.engine.step(batch), np.float64)
        self.step, self.batch_in_epoch, self.window_steps = (
            self.step + 1,
            self.batch_in_epoch + 1,
            self.window_steps + 1,
        )
        self.timed_steps += 1
        if not np.isfinite(sums).all():
            raise self.diverged("training loss")
        self.window += sums
        last = self.finished()
        if self.step % config.log_every == 0 or last:
            self.record_training()
        if config.eval_every and self.step % config.eval_every == 0 and not last:
            self.log.record({"step": self.step, "split": "heldout", **self.heldout_metrics()})
        if self.checkpoints.should_save(self.step) and not last:
            self.save()
        # every process asks, after every step
        if self.checkpoints.reached_preemption(self.step) and not last:
            self.interrupt()
        self.checkpoints.raise_if_failed()
        if self.timed_steps == 0:
            self.window_start = time.perf_counter()
        return last

    def record_training(self) -> None:
        """The training record of the window since the last one (metrics, learning rate,
        throughput)."""
        # heavy: loads keras, tensorflow; this module stays importable without it
        from model.evaluation.heldout import metrics_from_sums

        elapsed = time.perf_counter() - self.window_start
        self.total_time, self.total_steps = (
            self.total_time + elapsed,
            self.total_steps + self.timed_steps,
        )
        self.train_metrics = metrics_from_sums(self.window, self.config.rtd_weight)
        steps_per_second = self.timed_steps / max(elapsed, 1e-9)
        self.log.record(
            {
                "step": self.step,
                "split": "train",
                **self.train_metrics,
                "learning_rate": float(
                    self.schedule(self.step - 1) if self.schedule else self.learning_rate
                ),
                "steps_per_second": steps_per_second,
                "sequences_per_second": steps_per_second * self.config.batch_size,
                **self.budget_record(),
            }
        )
        self.log.progress(self.step, self.train_metrics, steps_per_second)
        self.window[:] = 0
        self.window_steps = self.timed_steps = 0

    def budget_record(self) -> dict:
        """The training time spent so far, for records and checkpoints under --time-budget."""
        if self.config.budget_seconds is None:
            return {}
        return {"training_seconds": self.clock.elapsed()}

    def heldout_metrics(self) -> dict:
        """Metrics on --eval-batches held-out batches (always the same ones); diverged if not
        finite."""
        # heavy: loads keras, tensorflow; this module stays importable without it
        from model.evaluation.heldout import eval_step_fn, evaluate_batches

        config = self.config
        self.engine.sync()
        self.eval_step = self.eval_step or eval_step_fn(self.model)
        batch_size = config.eval_batch_size or min(config.batch_size, 256)
        heldout = pretrain_input.heldout_batches(
            self.spec, batch_size, config.input, seed=config.seed, max_batches=config.eval_batches
        )
        metrics = evaluate_batches(
            self.model, heldout, self.eval_step, rtd_weight=config.rtd_weight
        )
        if not all(np.isfinite(list(metrics.values()))):
            raise self.diverged("held-out loss")
        return metrics

    def diverged(self, what: str) -> StageError:
        """`divergence.diverged` at this step, once the checkpoint being written is committed (so
        that it names the last finite one)."""
        self.checkpoints.wait()
        return diverged(self.config, self.step, what)

    def interrupt(self) -> None:
        """Stop for a signal: a checkpoint at this step (unless this step saved one), committed,
        then `Interrupted` naming it."""
        step, path = self.saved if self.saved[0] == self.step else (self.step, self.save())
        self.checkpoints.wait()
        saved = f"saved {path}" if path else "process 0 saved the checkpoint"
        raise Interrupted(f"{self.checkpoints.signal_name} at step {step}: {saved}")

    def save(self, final: bool = False) -> str | None:
        """A checkpoint of the weights, optimizer and position: copied to host memory now, written
        and committed in the background (the chief's path, whole once `checkpoints.wait()`
        returns; None elsewhere). `final`: the run's last, waited for; a signal that came during
        the last step, evaluation or this save then ends the run here, before the export
        (`Checkpoints.training_done`)."""

        config = self.config
        self.engine.sync()
        if not weights_finite(self.model):  # never let a NaN checkpoint replace the finite ones
            raise self.diverged("model weights")
        record = {
            "step": self.step,
            "epoch": self.epoch,
            "batch_in_epoch": self.batch_in_epoch,
            "seed": config.seed,
            "batch_size": config.batch_size,
            "preset": config.preset,
            "identity": self.identity,
            "records": len(self.log),
            "log_window": self.window.tolist(),
            "window_steps": self.window_steps,
            **self.budget_record(),
        }
        arrays = checkpointing.snapshot(self.model, self.optimizer) if self.chief else {}
        path = self.checkpoints.save(self.step, arrays, record)
        self.saved = (self.step, path)
        if final:
            self.checkpoints.training_done()
        return path


class LoopCounts:
    """What the training loop's figures are made of: every step of this run, and the steady ones
    (no compilation, evaluation or checkpoint in them)."""

    def __init__(self):
        self.steps, self.seconds, self.input_wait, self.real_tokens, self.tokens = 0, 0.0, 0.0, 0, 0
        self.steady_steps, self.steady_seconds, self.steady_real_tokens = 0, 0.0, 0
        self.steady_wait, self.instances, self.steady_instances = 0.0, 0, 0

    def add(
        self, waited: float, seconds: float, real: int, tokens: int, instances: int, steady: bool
    ) -> None:
        self.steps, self.seconds = self.steps + 1, self.seconds + seconds
        self.input_wait += waited
        self.real_tokens, self.tokens = self.real_tokens + real, self.tokens + tokens
        self.instances += instances
        if steady:
            self.steady_steps, self.steady_seconds = (
                self.steady_steps + 1,
                self.steady_seconds + seconds,
            )
            self.steady_real_tokens += real
            self.steady_instances += instances
            self.steady_wait += waited

    def steady_step_seconds(self) -> float:
        """The steady steps' mean time without their wait for the input: what the input must keep
        up with."""
        return (
            (self.steady_seconds - self.steady_wait) / self.steady_steps
            if self.steady_steps
            else 0.0
        )

    def figures(self, batch_size: int) -> dict:
        """The whole loop's sequences/s (compilations, evaluations, checkpoints and input waits
        included) and the steady steps' apart; the share of the loop spent waiting for the input;
        real (non-padding) tokens per second over the whole loop and over the steady steps, and
        their share of the batches' tokens; pretraining instances per second (a packed row holds
        several, an unpacked row is one). Tokens and instances are this process's rows; None where
        no step counts."""

        def rate(count: float, seconds: float, digits: int = 1):
            return round(count / seconds, digits) if seconds else None

        return {
            "loop_sequences_per_second": rate(self.steps * batch_size, self.seconds),
            "steady_sequences_per_second": rate(
                self.steady_steps * batch_size, self.steady_seconds
            ),
            "steady_steps": self.steady_steps,
            "input_wait_share": rate(self.input_wait, self.seconds, 4),
            "real_tokens_per_second": rate(self.real_tokens, self.seconds),
            "steady_real_tokens_per_second": rate(self.steady_real_tokens, self.steady_seconds),
            "real_token_share": rate(self.real_tokens, self.tokens, 4),
            "instances_per_second": rate(self.instances, self.seconds),
            "steady_instances_per_second": rate(self.steady_instances, self.steady_seconds),
        }
