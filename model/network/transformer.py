"""The two blocks of an ALBERT layer, each a separately shareable Keras layer.

`AttentionBlock`: multi-head self-attention (Q, K, V, output dense) + residual + LayerNorm.
`FeedForwardBlock`: dense H->F, activation, dense F->H + residual + LayerNorm ("LayerNorm_1").
Kernels are stored as Keras `Dense` kernels `[in, out]`, the layout of the TF1 checkpoints.
"""

from __future__ import annotations

import keras
from keras import ops

from model.network.config import AlbertConfig
from model.network.embeddings import as_config, truncated_normal
from model.network.packed_attention import (
    block_diagonal_mask,
    choose_kernel,
    environment_facts,
    packed_attention,
)


def activation_fn(name: str):
    """`gelu_new` is the tanh approximation used by the reference and Hugging Face."""
    if name == "gelu_new":
        return lambda x: keras.activations.gelu(x, approximate=True)
    if name == "gelu":
        return lambda x: keras.activations.gelu(x, approximate=False)
    return keras.activations.relu


def attention_uses_lengths() -> bool:
    """True on JAX with a GPU: attention is given each sequence's length (cuDNN's padding form of
    its fused kernel, which does no work on padding) instead of a dense mask."""
    if keras.config.backend() != "jax":
        return False
    import jax  # heavy: only the JAX backend asks

    return jax.default_backend() == "gpu"


def sequence_lengths(input_mask):
    """`input_mask [B, T]` -> int32 [B]: the tokens of each sequence (its padding comes last)."""
    return ops.cast(ops.sum(ops.cast(input_mask, "int32"), axis=1), "int32")


def dense_attention_mask(input_mask):
    """`input_mask [B, T]` (1 = token, 0 = padding) -> boolean `[B, 1, T, T]`: every query sees the
    same keys. The query axis is spelled out because cuDNN's fused attention (the flash path of
    `keras.ops.dot_product_attention` on GPU) rejects a mask that broadcasts over it."""
    keys = ops.cast(input_mask, "bool")[:, None, None, :]
    length = ops.shape(input_mask)[1]
    return ops.broadcast_to(keys, (ops.shape(input_mask)[0], 1, length, length))


def attention_mask(input_mask, instance_ids=None, cls_positions=None, dtype: str = "float32"):
    """What `AttentionBlock` masks with: the lengths [B] where `attention_uses_lengths`, else the
    dense `[B, 1, T, T]` mask. The lengths form assumes each sequence's padding comes after its
    tokens (as in every input of ours); the outputs at padding positions are then unspecified.

    Packed rows (`instance_ids [B, T]`, `cls_positions [B, K]`): `(instance_ids, cls_positions)`
    for the padding-free kernel `packed_attention.choose_kernel` picks for a computation in
    `dtype`, or the block-diagonal `[B, 1, T, T]` mask where it picks `dense`."""
    if instance_ids is not None:
        if choose_kernel(environment_facts(dtype)) == "dense":
            return block_diagonal_mask(instance_ids)
        return instance_ids, cls_positions
    return (
        sequence_lengths(input_mask)
        if attention_uses_lengths()
        else dense_attention_mask(input_mask)
    )


def length_attention(q, k, v, lengths, scale: float):
    """`jax.nn.dot_product_attention` of `[B, T, N, H]` heads over the first `lengths[b]` queries
    and keys of each sequence: cuDNN's fused kernel on a GPU in bf16/fp16 (no work on padding),
    XLA's implementation elsewhere. Padding queries get unspecified outputs."""
    import jax  # heavy: only the JAX backend has this form
    import jax.numpy as jnp  # heavy: as above

    fused = jax.default_backend() == "gpu" and q.dtype in (jnp.bfloat16, jnp.float16)
    return jax.nn.dot_product_attention(
        q,
        k,
        v,
        scale=scale,
        query_seq_lengths=lengths,
        key_value_seq_lengths=lengths,
        implementation="cudnn" if fused else "xla",
    )


def fused_attention_pays() -> bool:
    """False on JAX on CPU, where XLA compiles `jax.nn.dot_product_attention` (what the fused Keras
    op calls there) about 30% slower, forward + backward, than the explicit einsum + softmax (at 512
    tokens: 89 against 62 ms a layer); Keras' TensorFlow backend runs the explicit form itself."""
    if keras.config.backend() != "jax":
        return True
    import jax  # optional: the jax extra; only on the JAX backend

    return jax.default_backend() != "cpu"


@keras.saving.register_keras_serializable(package="albert")
class AttentionBlock(keras.layers.Layer):
    """`(x [B, T, H], mask) -> LayerNorm(x + Dense(attention(x)))`, `mask` as `attention_mask`
    gives it.

    Given lengths, uses `length_attention`. Otherwise uses the fused
    `keras.ops.dot_product_attention` (flash attention where the backend has it) except when
    attention-probability dropout is active in training, which needs the probabilities, and where
    it does not pay (`fused_attention_pays`).
    """

    def __init__(self, config: AlbertConfig | dict, **kwargs):
        super().__init__(**kwargs)
        self.config = as_config(config)
        cfg = self.config
        dense = {"kernel_initializer": truncated_normal(cfg), "dtype": self.dtype_policy}
        self.query = keras.layers.Dense(cfg.hidden_size, name="query", **dense)
        self.key = keras.layers.Dense(cfg.hidden_size, name="key", **dense)
        self.value = keras.layers.Dense(cfg.hidden_size, name="value", **dense)
        self.output_dense = keras.layers.Dense(cfg.hidden_size, name="output_dense", **dense)
        self.layer_norm = keras.layers.LayerNormalization(
            epsilon=cfg.layer_norm_eps, dtype=self.dtype_policy, name="layer_norm"
        )
        self.probs_dropout = keras.layers.Dropout(
            cfg.attention_probs_dropout_prob, dtype=self.dtype_policy, name="probs_dropout"
        )
        self.output_dropout = keras.layers.Dropout(
            cfg.hidden_dropout_prob, dtype=self.dtype_policy, name="output_dropout"
        )

    def build(self, input_shape=None):
        shape = (None, None, self.config.hidden_size)
        for layer in (self.query, self.key, self.value, self.output_dense, self.layer_norm):
            layer.build(shape)
        self.built = True

    def _heads(self, x):
        batch, seq_len = ops.shape(x)[0], ops.shape(x)[1]
        cfg = self.config
        return ops.reshape(x, (batch, seq_len, cfg.num_attention_heads, cfg.head_size))

    def call(self, x, mask, training=False, output_scores=False):
        """`mask`: `attention_mask`'s dense [B, 1, T, T] mask, lengths [B] or packed rows'
        (instance_ids [B, T], cls_positions [B, K]). With `output_scores`, `(output, scores)`:
        the scaled query-key products `[B, N, T, T]` before the softmax, float32, 0 where the mask
        hides the key (the attention targets of `model.distill.matching`); the explicit einsum
        path computes them."""
        q, k, v = self._heads(self.query(x)), self._heads(self.key(x)), self._heads(self.value(x))
        scale = 1.0 / float(self.config.head_size) ** 0.5
        dropout = training and self.config.attention_probs_dropout_prob > 0
        explicit = dropout or output_scores  # the kernels have no probabilities to drop or show
        if isinstance(mask, tuple) and explicit:
            mask = block_diagonal_mask(mask[0])
        if isinstance(mask, tuple):
            kernel = choose_kernel(environment_facts(keras.backend.standardize_dtype(q.dtype)))
            context = packed_attention(kernel, q, k, v, mask[0], mask[1].shape[1], scale)
        elif len(mask.shape) == 1 and not explicit:
            context = length_attention(q, k, v, mask, scale)
        else:
            if len(mask.shape) == 1:
                positions = ops.arange(ops.shape(x)[1], dtype="int32")
                mask = dense_attention_mask(positions[None, :] < mask[:, None])
            if explicit or not fused_attention_pays():
                products = ops.einsum("btnh,bsnh->bnts", q, k) * ops.cast(scale, q.dtype)
                scores = ops.where(mask, ops.cast(products, "float32"), -1e9)
                probs = self.probs_dropout(ops.softmax(scores, axis=-1), training=training)
                context = ops.einsum("bnts,bsnh->btnh", ops.cast(probs, v.dtype), v)
            else:
                context = ops.dot_product_attention(q, k, v, mask=mask, scale=scale)
        context = ops.reshape(context, ops.shape(x))
        out = self.output_dropout(self.output_dense(context), training=training)
        out = self.layer_norm(x + out)
        return (out, ops.where(mask, scores, 0.0)) if output_scores else out

    def get_config(self):
        return {**super().get_config(), "config": self.config.model_dump()}


@keras.saving.register_keras_serializable(package="albert")
class FeedForwardBlock(keras.layers.Layer):
    """`x [B, T, H] -> LayerNorm(x + Dense_F->H(act(Dense_H->F(x))))`."""

    def __init__(self, config: AlbertConfig | dict, **kwargs):
        super().__init__(**kwargs)
        self.config = as_config(config)
        cfg = self.config
        dense = {"kernel_initializer": truncated_normal(cfg), "dtype": self.dtype_policy}
        self.intermediate = keras.layers.Dense(cfg.intermediate_size, name="intermediate", **dense)
        self.output_dense = keras.layers.Dense(cfg.hidden_size, name="output_dense", **dense)
        self.layer_norm = keras.layers.LayerNormalization(
            epsilon=cfg.layer_norm_eps, dtype=self.dtype_policy, name="layer_norm"
        )
        self.dropout = keras.layers.Dropout(
            cfg.hidden_dropout_prob, dtype=self.dtype_policy, name="dropout"
        )
        self.activation = activation_fn(cfg.hidden_act)

    def build(self, input_shape=None):
        self.intermediate.build((None, None, self.config.hidden_size))
        self.output_dense.build((None, None, self.config.intermediate_size))
        self.layer_norm.build((None, None, self.config.hidden_size))
        self.built = True

    def call(self, x, training=False):
        out = self.output_dense(self.activation(self.intermediate(x)))
        return self.layer_norm(x + self.dropout(out, training=training))

    def get_config(self):
        return {**super().get_config(), "config": self.config.model_dump()}
