"""The JAX training step: stateless and jit-compiled, its state held outside the Keras variables."""

from __future__ import annotations

import contextlib
import functools

import numpy as np

from model.evaluation.replaced_tokens import RTD_WEIGHT, TOKEN_DENOMINATOR_EPSILON
from model.input.prefetch import DEPTH, DevicePrefetch, Placed
from model.input.records import MLM_DENOMINATOR_EPSILON
from model.input.source import numpy_batches
from model.pretrain.batches import micro_batches


class JaxState:
    """The JAX training state (trainable, non-trainable, optimizer values) outside the Keras
    variables.

    The step donates these buffers (XLA updates them in place), so the state never shares a buffer
    with a Keras variable: it starts from copies and `sync_to_keras` assigns copies.
    """

    def __init__(self, model, optimizer):
        self.model, self.optimizer = model, optimizer
        self.values = _copies(
            (
                [v.value for v in model.trainable_variables],
                [v.value for v in model.non_trainable_variables],
                [v.value for v in optimizer.variables],
            )
        )

    def sync_to_keras(self) -> None:
        trainable, non_trainable, optimizer_values = _copies(self.values)
        for variables, values in (
            (self.model.trainable_variables, trainable),
            (self.model.non_trainable_variables, non_trainable),
            (self.optimizer.variables, optimizer_values),
        ):
            for variable, value in zip(variables, values):
                variable.assign(value)


def _copies(tree):
    import jax  # heavy: JAX, only this path
    import jax.numpy as jnp  # heavy: JAX, only this path

    return jax.tree_util.tree_map(jnp.copy, tree)


DENOMINATORS = ("mlm_denominator", "sop_denominator")  # the input's; the step computes its own


def jax_train_step(
    model, optimizer, accumulation: int, distribution=None, rtd_weight: float = RTD_WEIGHT
):
    """(state values, batch) -> (new state values, summed metrics [`sum_names`]), jit-compiled;
    the input state's buffers are donated (reused for the new state), so a caller must not read
    them again.

    The step normalises the loss by the global batch's masked-token weight and sequence count (and,
    for an `AlbertElectraModel`, its real-token count), which it computes itself: with several
    processes each one holds only its rows of the batch. `place`
    turns this process's rows (numpy) into the global batch, sharded over the distribution's
    devices (on the default device without a distribution); the transfer is asynchronous."""
    import jax  # heavy: JAX, only this path
    import jax.numpy as jnp  # heavy: JAX, only this path

    # heavy: loads keras, tensorflow; this module stays importable without it
    from model.evaluation.heldout import objective_loss, sum_names

    # heavy: loads keras, tensorflow; this module stays importable without it
    from model.network.electra import inputs_for, objective_of

    model_inputs, objective = inputs_for(model), objective_of(model)
    width = len(sum_names(objective))

    def loss_fn(trainable, non_trainable, batch, denominators):
        outputs, non_trainable = model.stateless_call(
            trainable, non_trainable, model_inputs(batch), training=True
        )
        loss, sums = objective_loss(outputs, batch, denominators, rtd_weight)
        return loss, (sums, non_trainable)

    grad_fn = jax.value_and_grad(loss_fn, has_aux=True)

    @functools.partial(jax.jit, donate_argnums=0)
    def step(values, batch):
        trainable, non_trainable, optimizer_values = values
        weights = batch["masked_lm_weights"]
        denominators = (
            jnp.sum(weights, dtype=jnp.float32) + jnp.float32(MLM_DENOMINATOR_EPSILON),
            jnp.sum(batch["sop_weights"], dtype=jnp.float32)  # packed rows: their instances
            if "sop_weights" in batch
            else jnp.float32(weights.shape[0]),
        )
        if objective == "rtd":
            tokens = jnp.sum(batch["input_mask"], dtype=jnp.float32)
            denominators += (tokens + jnp.float32(TOKEN_DENOMINATOR_EPSILON),)
        if accumulation == 1:
            (_, (sums, non_trainable)), grads = grad_fn(
                trainable, non_trainable, batch, denominators
            )
        else:
            micro = micro_batches(
                batch, accumulation, lambda v, k: v.reshape((k, -1) + v.shape[1:])
            )

            def body(carry, micro_batch):
                grads, sums, non_trainable = carry
                (_, (s, non_trainable)), g = grad_fn(
                    trainable, non_trainable, micro_batch, denominators
                )
                return (jax.tree_util.tree_map(jnp.add, grads, g), sums + s, non_trainable), None

            zeros = jax.tree_util.tree_map(jnp.zeros_like, trainable)
            (grads, sums, non_trainable), _ = jax.lax.scan(
                body, (zeros, jnp.zeros(width), non_trainable), micro
            )
        trainable, optimizer_values = optimizer.stateless_apply(optimizer_values, grads, trainable)
        return (trainable, non_trainable, optimizer_values), sums

    def place(batch):
        batch = {k: v for k, v in batch.items() if k not in DENOMINATORS}
        if distribution is None:
            return jax.device_put(batch)
        return {
            k: jax.make_array_from_process_local_data(
                distribution.get_data_layout(v.shape).backend_layout, v
            )
            for k, v in batch.items()
        }

    return step, place


class JaxTraining:
    """The JAX backend as the loop uses it: `step(batch)` -> sums, `sync()`, `batches(dataset)`,
    `prefetched(items)`. `prefetch`: batches placed on the devices ahead of the step (0: each
    placed by the step that takes it)."""

    prefetch = DEPTH

    def __init__(self, model, optimizer, config, distribution):
        self.state = JaxState(model, optimizer)
        self.optimizer = optimizer
        self._step, self._place = jax_train_step(
            model, optimizer, config.gradient_accumulation, distribution, config.rtd_weight
        )

    def step(self, batch):
        """One update on `batch`: host rows, or `Placed` by `prefetched`."""
        arrays = batch.arrays if isinstance(batch, Placed) else self._place(batch)
        self.state.values, sums = self._step(self.state.values, arrays)
        return sums

    def prefetched(self, items):
        """A context manager: the run's (epoch, batch in epoch, batch) `items` with each batch
        placed on the devices `prefetch` batches ahead (`model.input.prefetch.DevicePrefetch`),
        the prefetch thread stopped when the block ends."""
        if not self.prefetch:
            return contextlib.nullcontext(items)
        return DevicePrefetch(items, self._place, self.prefetch)

    def set_learning_rate(self, value: float) -> None:
        """The next steps' learning rate: the optimizer's learning-rate value in the state, replaced
        with one of the same dtype and placement (the compiled step takes it as an argument)."""
        import jax  # heavy: only the JAX backend needs it

        rate = self.optimizer.learning_rate  # a variable: built with a float learning rate
        index = next(i for i, v in enumerate(self.optimizer.variables) if v is rate)
        trainable, non_trainable, optimizer_values = self.state.values
        old = optimizer_values[index]
        optimizer_values = list(optimizer_values)
        value = np.asarray(value, old.dtype)  # placed as `old` was: else the step compiles again
        optimizer_values[index] = (
            jax.device_put(value, old.sharding) if old.committed else jax.numpy.asarray(value)
        )
        self.state.values = (trainable, non_trainable, optimizer_values)

    def compilations(self) -> int:
        """How many times the training step compiled (once per batch shape)."""
        return self._step._cache_size()

    def sync(self) -> None:
        """Copy the training state into the Keras variables (before evaluating or saving)."""
        self.state.sync_to_keras()

    def batches(self, dataset):

        return numpy_batches(dataset)
