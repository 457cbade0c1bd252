"""The TensorFlow training step: a tf.distribute custom loop (one or many devices and workers)."""

from __future__ import annotations

from model.pretrain.batches import micro_batches
from model.runtime import distribute


def tf_train_step(model, optimizer, strategy, accumulation: int, jit_compile: bool):
    """batch (distributed) -> summed metrics [6]; one optimizer update per call.

    Each replica computes gradients of its share of the global loss (normalised by the global
    masked-token weight and sequence count carried in the batch), summed over its micro-batches;
    the replica gradients are summed across devices and workers, clipped by global norm and applied
    once (cross-replica), so every replica and worker holds identical weights.
    """
    import tensorflow as tf  # heavy: TensorFlow, only this path

    # heavy: loads keras, tensorflow; this module stays importable without it
    from model.evaluation.heldout import pretraining_loss

    # heavy: loads keras, tensorflow; this module stays importable without it
    from model.network.pretraining_model import model_inputs

    variables = model.trainable_variables

    def gradients(batch):
        with tf.GradientTape() as tape:
            outputs = model(model_inputs(batch), training=True)
            loss, sums = pretraining_loss(
                outputs, batch, batch["mlm_denominator"][0], batch["sop_denominator"][0]
            )
            scaled = optimizer.scale_loss(loss)
        grads = tape.gradient(scaled, variables)
        return [tf.convert_to_tensor(g) for g in grads], sums

    def replica_step(batch):
        if accumulation == 1:
            return gradients(batch)
        micro = micro_batches(
            batch,
            accumulation,
            lambda v, k: tf.reshape(v, tf.concat([[k, -1], tf.shape(v)[1:]], 0)),
        )

        def body(i, grads, sums):
            g, s = gradients({k: v[i] for k, v in micro.items()})
            return i + 1, [a + b for a, b in zip(grads, g)], sums + s

        _, grads, sums = tf.while_loop(
            lambda i, *_: i < accumulation,
            body,
            (tf.constant(0), [tf.zeros_like(v) for v in variables], tf.zeros([6])),
        )
        return grads, sums

    compiled = tf.function(replica_step, jit_compile=jit_compile, autograph=False)

    def reduced_replica_step(batch):
        grads, sums = compiled(batch)
        context = tf.distribute.get_replica_context()
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
        self.step = tf_train_step(model, optimizer, strategy, config.gradient_accumulation, jit)
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
