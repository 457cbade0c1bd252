"""Keras's one handle on TensorFlow, read as "not installed" while the process has not loaded it.

Keras asks `keras.src.utils.module_utils.tensorflow.available`, which imports TensorFlow wherever
it is installed, in two places a JAX run reaches: `keras.utils.set_random_seed` (to seed
TensorFlow's generator) and the serializer of every `.keras` file and keras-hub preset (is a value
a `tf.TensorShape`, a `tf.DType`, a `tf.TypeSpec`?). In a JAX run that reads its input with Grain,
that import is its only use of TensorFlow: seconds of CPU and hundreds of MB (docs/measurements.md).
While TensorFlow is not loaded, no value is of its types and its generator has nothing to seed, so
inside `absent_unless_loaded()` the handle answers "not installed"; once it is loaded, Keras asks
it as usual.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator


@contextlib.contextmanager
def absent_unless_loaded() -> Iterator[None]:
    """Inside the block Keras reads TensorFlow as not installed, unless it is already loaded."""
    if "tensorflow" in sys.modules:
        yield
        return
    from keras.src.utils import module_utils

    handle = module_utils.tensorflow
    known = handle._available
    handle._available = False
    try:
        yield
    finally:
        handle._available = known
