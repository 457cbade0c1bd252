"""Attention given the sequences' lengths (`jax.nn.dot_product_attention` with query and key/value
lengths, cuDNN's padding form on a GPU, XLA's on CPU) equals today's dense-mask attention on
batches with padding: the same outputs at every real position and the same gradients."""

from __future__ import annotations

import numpy as np
import pytest

keras = pytest.importorskip("keras")

from model.network.config import get_preset
from model.network.encoder import AlbertEncoder
from model.network.transformer import dense_attention_mask, sequence_lengths

pytestmark = pytest.mark.keras


@pytest.fixture
def jax_encoder(keras_backend):
    if keras_backend != "jax":
        pytest.skip("attention over lengths is the JAX backend's (TensorFlow keeps the dense mask)")
    keras.utils.set_random_seed(0)
    config = get_preset("albert-nano", vocab_size=100, num_hidden_layers=3)
    encoder = AlbertEncoder(config)
    encoder.build()
    return encoder


def test_lengths_and_the_dense_mask_give_the_same_outputs_and_gradients(jax_encoder):
    import jax
    import jax.numpy as jnp

    lengths = np.array([16, 9, 1, 12], np.int32)
    input_mask = (np.arange(16)[None, :] < lengths[:, None]).astype(np.int32)
    rng = np.random.default_rng(0)
    embeddings = jnp.asarray(rng.normal(size=(4, 16, 16)), jnp.float32)
    weights = jnp.asarray(rng.normal(size=(4, 16, 32)) * input_mask[..., None], jnp.float32)
    variables = [v.value for v in jax_encoder.trainable_variables]
    masks = {
        "dense": dense_attention_mask(jnp.asarray(input_mask)),
        "lengths": sequence_lengths(jnp.asarray(input_mask)),
    }
    assert masks["lengths"].tolist() == lengths.tolist()

    def loss_and_states(values, mask):
        mapping = list(zip(jax_encoder.trainable_variables, values))
        with keras.StatelessScope(state_mapping=mapping):
            states = jax_encoder(embeddings, mask)
        return jnp.sum(states[-1] * weights), states  # real positions only

    results = {}
    for name, mask in masks.items():
        (loss, states), grads = jax.value_and_grad(loss_and_states, has_aux=True)(variables, mask)
        results[name] = loss, states, grads
    (dense_loss, dense_states, dense_grads) = results["dense"]
    (length_loss, length_states, length_grads) = results["lengths"]
    real = input_mask.astype(bool)
    for dense_state, length_state in zip(dense_states, length_states):
        np.testing.assert_allclose(
            np.asarray(length_state)[real], np.asarray(dense_state)[real], rtol=1e-5, atol=1e-5
        )
    np.testing.assert_allclose(length_loss, dense_loss, rtol=1e-5)
    for dense_grad, length_grad in zip(dense_grads, length_grads):
        np.testing.assert_allclose(length_grad, dense_grad, rtol=1e-4, atol=1e-6)
