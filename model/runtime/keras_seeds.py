"""The seeds Keras draws while a model is built, from a generator of the run's own.

An initializer or a `Dropout` built without a seed gets one from Python's global `random`
(`keras.src.random.seed_generator.make_default_seed`), which every thread of the process shares.
A thread that draws from it while the model is built changes the model: in a flow, Prefect's
events client pings its websocket with `random.getrandbits`, so the two hosts of one run built
different dropout seed states (and could build different weights), and JAX refused them
(`... passed to device_put is not the same on each process`). Inside `drawn_from(seed)` Keras
draws from `random.Random(seed)` instead, the same sequence as after
`keras.utils.set_random_seed(seed)` on a quiet process, so the model is what it was before and the
same on every host whatever other threads do. One model is built at a time inside it.
"""

from __future__ import annotations

import contextlib
import random

from model.runtime import keras_tensorflow


@contextlib.contextmanager
def drawn_from(seed: int):
    """Keras's default seeds come from `random.Random(seed)` inside the block (module docstring)."""
    from keras.src.random import seed_generator  # its `python_random` is Keras's one source

    shared = seed_generator.python_random
    seed_generator.python_random = random.Random(seed)
    try:
        yield
    finally:
        seed_generator.python_random = shared


def set_random_seed(seed: int, *, tensorflow: bool) -> None:
    """`keras.utils.set_random_seed(seed)`: Python's, NumPy's and Keras's seeds, and TensorFlow's
    where the run uses TensorFlow (`tensorflow`: its backend or a tf.data input) or has loaded it.
    Keras seeds TensorFlow wherever it is installed, which imports it into a JAX run that reads its
    input with Grain and never uses it (`model.runtime.keras_tensorflow`)."""
    import keras

    if tensorflow:
        keras.utils.set_random_seed(seed)
        return
    with keras_tensorflow.absent_unless_loaded():
        keras.utils.set_random_seed(seed)
