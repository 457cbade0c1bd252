"""Which input feeds pretraining: Grain (`model.input.grain`) on the JAX backend, which never
imports TensorFlow, and tf.data (`model.input.tf_data`) on the TensorFlow backend. Both give the
same batches in the same order (`model.input.records` defines it), so `--input` is not part of a
run's identity."""

from __future__ import annotations

import contextlib

from albert.errors import StageError
from model.input import epoch_order


def uses_grain(choice: str) -> bool:
    """`auto`: Grain on the JAX backend, tf.data on TensorFlow. Grain feeds only the JAX training
    step."""
    import keras  # heavy: Keras loads its backend; this module stays importable without it

    backend = keras.config.backend()
    if choice == "grain" and backend != "jax":
        raise StageError(
            f"--input grain needs the JAX backend (KERAS_BACKEND=jax); this run uses {backend}"
        )
    return choice == "grain" or (choice == "auto" and backend == "jax")


def train_batches(spec, batch_size: int, choice: str = "auto", **options):
    """One epoch of training batches with the loss denominators: a Grain IterDataset of numpy dicts
    or a tf.data.Dataset. `options`: epoch, seed, skip_batches, shuffle_buffer, workers (see
    `train_dataset`)."""
    if uses_grain(choice):
        # heavy: loads jax, grain; this module stays importable without it
        from model.input import grain as grain_input

        return grain_input.train_batches(spec, batch_size, **options)
    if options.get("length_buckets"):
        raise StageError("--length-buckets needs the Grain input (the JAX backend)")
    # heavy: loads keras, tensorflow; this module stays importable without it
    from model.input import tf_data as pretrain_data

    return pretrain_data.with_denominators(
        pretrain_data.train_dataset(spec, batch_size, **options), batch_size
    )


@contextlib.contextmanager
def run_batches(
    spec,
    batch_size: int,
    choice: str = "auto",
    *,
    epoch: int,
    skip_batches: int = 0,
    to_batches=iter,
    **options,
):
    """A run's training batches as (epoch, index of the batch in its epoch, batch), epoch after
    epoch from batch `skip_batches` of `epoch` on, until an epoch holds no whole batch; closed when
    the `with` block ends, however it ends.

    Grain: one stream whose workers carry on across epochs (`grain_input.run_batches`), closed
    explicitly (`grain_input.close_batches`). tf.data: one dataset an epoch, each turned into
    batches by `to_batches` (the TensorFlow engine distributes them over its replicas). `options`:
    seed, shuffle_buffer, workers, length_buckets, process (see `train_batches`)."""
    if uses_grain(choice):
        # heavy: loads jax, grain; this module stays importable without it
        from model.input import grain as grain_input

        dataset = grain_input.run_batches(
            spec, batch_size, epoch=epoch, skip_batches=skip_batches, **options
        )
        iterator = iter(dataset)
        try:
            yield iterator
        finally:
            grain_input.close_batches(iterator, options.get("workers", 0))
        return

    def open_epoch(number: int, skip: int):
        return to_batches(
            train_batches(spec, batch_size, choice, epoch=number, skip_batches=skip, **options)
        )

    with contextlib.closing(epoch_order.chained_epochs(open_epoch, epoch, skip_batches)) as batches:
        yield batches


def heldout_batches(spec, batch_size: int, choice: str = "auto", **options):
    """The held-out batches as dicts of numpy arrays. `options`: seed, eval_every, max_batches."""
    if uses_grain(choice):
        # heavy: loads jax, grain; this module stays importable without it
        from model.input import grain as grain_input

        return grain_input.heldout_batches(spec, batch_size, **options)
    # heavy: loads keras, tensorflow; this module stays importable without it
    from model.input import tf_data as pretrain_data

    return pretrain_data.heldout_dataset(spec, batch_size, **options).as_numpy_iterator()


def numpy_batches(batches):
    """An iterator of dicts of numpy arrays over a Grain dataset or a tf.data.Dataset."""
    return batches.as_numpy_iterator() if hasattr(batches, "as_numpy_iterator") else iter(batches)
