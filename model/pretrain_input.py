"""Which input feeds pretraining: Grain (`model.grain_input`) on the JAX backend, which never
imports TensorFlow, and tf.data (`model.pretrain_data`) on the TensorFlow backend. Both give the
same batches in the same order (`model.pretrain_records` defines it), so `--input` is not part of a
run's identity."""

from __future__ import annotations

from albert.errors import StageError


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
        from model import grain_input

        return grain_input.train_batches(spec, batch_size, **options)
    if options.get("length_buckets"):
        raise StageError("--length-buckets needs the Grain input (the JAX backend)")
    # heavy: loads keras, tensorflow; this module stays importable without it
    from model import pretrain_data

    return pretrain_data.with_denominators(
        pretrain_data.train_dataset(spec, batch_size, **options), batch_size
    )


def heldout_batches(spec, batch_size: int, choice: str = "auto", **options):
    """The held-out batches as dicts of numpy arrays. `options`: seed, eval_every, max_batches."""
    if uses_grain(choice):
        # heavy: loads jax, grain; this module stays importable without it
        from model import grain_input

        return grain_input.heldout_batches(spec, batch_size, **options)
    # heavy: loads keras, tensorflow; this module stays importable without it
    from model import pretrain_data

    return pretrain_data.heldout_dataset(spec, batch_size, **options).as_numpy_iterator()


def numpy_batches(batches):
    """An iterator of dicts of numpy arrays over a Grain dataset or a tf.data.Dataset."""
    return batches.as_numpy_iterator() if hasattr(batches, "as_numpy_iterator") else iter(batches)
