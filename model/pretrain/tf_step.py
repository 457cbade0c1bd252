"""The TensorFlow training step: a tf.distribute custom loop (one or many devices and workers)."""

from __future__ import annotations

from model.evaluation.replaced_tokens import RTD_WEIGHT, TOKEN_DENOMINATOR_EPSILON
from model.pretrain.batches import micro_batches
from model.runtime import distribute


def tf_train_step(
    model, optimizer, strategy, accumulation: int, jit_compile: bool, rtd_weight=RTD_WEIGHT
):
    """batch (distributed) -> summed metrics [`sum_names`]; one optimizer update per call.

    Each replica computes gradients of its share of the global loss (normalised by the global
    masked-token weight and sequence count carried in the batch and, for an `AlbertElectraModel`,
    the real-token count summed over the replicas), summed over its micro-batches;
    the replica gradients are summed across devices and workers, clipped by global norm and applied
    once (cross-replica), so every replica and worker holds identical weights.
    """
    import tensorflow as tf  # heavy: TensorFlow, only this path

    # heavy: loads keras, tensorflow; this module stays importable without it
    from model.evaluation.heldout import objective_loss, sum_names

    # heavy: loads keras, tensorflow; this module stays importable without it
    from model.network.electra import inputs_for, objective_of

    variables = model.trainable_variables
    model_inputs, objective = inputs_for(model), objective_of(model)
    width = len(sum_names(objective))

    def gradients(batch, tokens):
        with tf.GradientTape() as tape:
            outputs = model(model_inputs(batch), training=True)
            denominators = (batch["mlm_denominator"][0], batch["sop_denominator"][0], tokens)
            loss, sums = objective_loss(outputs, batch, denominators, rtd_weight)
            scaled = optimizer.scale_loss(loss)
        grads = tape.gradient(scaled, variables)
        return [tf.convert_to_tensor(g) for g in grads], sums

    def replica_step(batch, tokens):
        if accumulation == 1:
            return gradients(batch, tokens)
        micro = micro_batches(
            batch,
            accumulation,
            lambda v, k: tf.reshape(v, tf.concat([[k, -1], tf.shape(v)[1:]], 0)),
        )

        def body(i, grads, sums):
            g, s = gradients({k: v[i] for k, v in micro.items()}, tokens)
            return i + 1, [a + b for a, b in zip(grads, g)], sums + s

        _, grads, sums = tf.while_loop(
            lambda i, *_: i < accumulation,
            body,
            (tf.constant(0), [tf.zeros_like(v) for v in variables], tf.zeros([width])),
        )
        return grads, sums

    compiled = tf.function(replica_step, jit_compile=jit_compile, autograph=False)

    def reduced_replica_step(batch):
        context = tf.distribute.get_replica_context()
        tokens = tf.constant(1.0)  # the masked-LM objective does not count tokens
        if objective == "rtd":
            real = tf.reduce_sum(tf.cast(batch["input_mask"], tf.float32))
            tokens = context.all_reduce(tf.distribute.ReduceOp.SUM, real)
            tokens += TOKEN_DENOMINATOR_EPSILON
        grads, sums = compiled(batch, tokens)
        return context.all_reduce(tf.distribute.ReduceOp.SUM, grads), context.all_reduce(
            tf.distribute.ReduceOp.SUM, sums
        )

    def first(value):
        return strategy.experimental_local_results(value)[0]

    @tf.function(autograph=False)
    def step(batch):
        grads, sums = strategy.run(reduced_replica_step, args=(batch,))
        optimizer.apply([first(g) for g in grads], variables)
        return first(sums)

    return step


class TfTraining:
    """The TensorFlow backend as the loop uses it: `step(batch)` -> sums, `sync()`,
    `batches(dataset)`."""

    def __init__(self, model, optimizer, config, strategy, replicas: int):
        import tensorflow as tf  # heavy: TensorFlow, only this path

        jit = config.jit_compile
        if jit is None:
            jit = bool(config.tpu or tf.config.list_physical_devices("GPU"))
        self.step = tf_train_step(
            model, optimizer, strategy, config.gradient_accumulation, jit, config.rtd_weight
        )
        self.strategy, self.replicas, self.optimizer = strategy, replicas, optimizer

    def set_learning_rate(self, value: float) -> None:
        """The next steps' learning rate (an optimizer variable the compiled step reads)."""
        self.optimizer.learning_rate = value

    def compilations(self) -> int:
        """How many times the training step was traced (once per batch signature)."""
        return self.step.experimental_get_tracing_count()

    def sync(self) -> None:
        """Nothing to do: the steps update the Keras variables themselves."""

    def batches(self, dataset):
        """`dataset`'s batches, distributed over the replicas and workers when there are several."""
        import tensorflow as tf  # heavy: TensorFlow, only this path

        if self.replicas == 1 and not distribute.cluster_size():
            return iter(dataset)
        options = tf.data.Options()
        options.experimental_distribute.auto_shard_policy = (
            tf.data.experimental.AutoShardPolicy.DATA
        )
        return iter(self.strategy.experimental_distribute_dataset(dataset.with_options(options)))
