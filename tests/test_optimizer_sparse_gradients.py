"""Our optimizers on an embedding looked up with repeated ids: the same weights whether the gradient
comes as TensorFlow's `tf.IndexedSlices` (a lookup) or dense (a one-hot product), clipping included.

Keras, given `tf.IndexedSlices`, squares each lookup's row before summing an id's repeats: before
`model.optimization.optimizers.DenseGradients`, the global norm that clips came out too small on the
TF backend (and so did Adam's second moment, unclipped). On JAX every gradient is dense: both agree
as they are.
"""

import numpy as np
import pytest

keras = pytest.importorskip("keras")
from keras import ops

from model.optimization.optimizers import build_optimizer

VOCAB, WIDTH = 5, 3
# Batches with an id repeated 8 times, then none: Keras' norm of the first is wrong, of the second
# right, so the clipping changes the steps' relative sizes (and Adam's result) where it is wrong.
BATCHES = [
    np.array([[1, 1, 1, 1], [1, 1, 1, 1]], np.int32),
    np.array([[0, 1, 2, 3], [4, 3, 2, 1]], np.int32),
] * 2
TARGETS = np.full((2, 4, WIDTH), 10.0, np.float32)  # gradient norms well above the clipping's 1.0


class Lookup(keras.layers.Layer):
    """An embedding table read by lookup (`ops.take`, as keras.layers.Embedding) or by product."""

    def __init__(self, one_hot: bool, **kwargs):
        super().__init__(**kwargs)
        self.one_hot = one_hot

    def build(self, input_shape):
        initializer = keras.initializers.RandomNormal(seed=0)
        self.table = self.add_weight((VOCAB, WIDTH), initializer=initializer, name="table")

    def call(self, ids):
        if self.one_hot:
            return ops.matmul(ops.one_hot(ids, VOCAB), self.table)
        return ops.take(self.table, ids, axis=0)


def trained(name: str, one_hot: bool, clipnorm: float | None) -> np.ndarray:
    model = keras.Sequential([keras.Input((4,), dtype="int32"), Lookup(one_hot)])
    model.compile(optimizer=build_optimizer(name, 0.01, clipnorm=clipnorm), loss="mse")
    for ids in BATCHES:
        model.train_on_batch(ids, TARGETS)
    return ops.convert_to_numpy(model.layers[0].table)


@pytest.mark.keras
@pytest.mark.parametrize("clipnorm", [1.0, None])
@pytest.mark.parametrize("name", ["adamw", "lamb"])
def test_lookups_train_as_dense_gradients(name, clipnorm):
    np.testing.assert_allclose(
        trained(name, False, clipnorm), trained(name, True, clipnorm), rtol=0, atol=1e-6
    )
