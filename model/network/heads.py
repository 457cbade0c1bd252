"""Output heads on the backbone: masked LM, sentence order, and the fine-tuning task heads.

Task heads (used by `model.finetune`):
* `SequenceClassificationHead(num_labels)`: pooled `[CLS]` -> dropout -> logits `[B, num_labels]`
  (`num_labels=1` is regression, e.g. STS-B);
* `SpanExtractionHead`: sequence output -> `start_logits`, `end_logits` `[B, T]`, padding masked
  out. SQuAD v2 uses position 0 (`[CLS]`) as the "no answer" span, as BERT/ALBERT/Hugging Face do;
* `MultipleChoiceHead`: pooled outputs of `B * C` flattened (context, choice) pairs -> `[B, C]`.
"""

from __future__ import annotations

import keras
from keras import ops

from model.network.config import AlbertConfig
from model.network.embeddings import as_config, truncated_normal
from model.network.transformer import activation_fn

NEG_INF = -1e9


def gather_positions(sequence, positions):
    """`sequence [B, T, H]`, `positions [B, P]` int -> `[B, P, H]` (the masked tokens only)."""
    positions = ops.cast(positions, "int32")
    index = ops.broadcast_to(
        positions[:, :, None],
        (ops.shape(positions)[0], ops.shape(positions)[1], ops.shape(sequence)[2]),
    )
    return ops.take_along_axis(sequence, index, axis=1)


class _ConfigLayer(keras.layers.Layer):
    """A layer built from an `AlbertConfig` that it serialises with itself."""

    def __init__(self, config: AlbertConfig | dict, **kwargs):
        super().__init__(**kwargs)
        self.config = as_config(config)

    def _dense(self, units, name, **kwargs):
        return keras.layers.Dense(
            units,
            kernel_initializer=truncated_normal(self.config),
            dtype=self.dtype_policy,
            name=name,
            **kwargs,
        )

    def get_config(self):
        return {**super().get_config(), "config": self.config.model_dump()}


@keras.saving.register_keras_serializable(package="albert")
class MaskedLMHead(_ConfigLayer):
    """`(hidden [.., H], word_embeddings [V, E]) -> logits [.., V]` (float32).

    Dense H->E, activation, LayerNorm, then the transposed (tied) word embeddings plus a bias.
    """

    def __init__(self, config: AlbertConfig | dict, **kwargs):
        super().__init__(config, **kwargs)
        cfg = self.config
        self.dense = self._dense(cfg.embedding_size, "dense")
        self.layer_norm = keras.layers.LayerNormalization(
            epsilon=cfg.layer_norm_eps, dtype=self.dtype_policy, name="layer_norm"
        )
        self.activation = activation_fn(cfg.hidden_act)

    def build(self, input_shape=None):
        self.dense.build((None, self.config.hidden_size))
        self.layer_norm.build((None, self.config.embedding_size))
        self.bias = self.add_weight(
            shape=(self.config.vocab_size,), initializer="zeros", name="output_bias"
        )
        self.built = True

    def call(self, hidden, word_embeddings):
        x = self.layer_norm(self.activation(self.dense(hidden)))
        logits = ops.matmul(x, ops.transpose(ops.cast(word_embeddings, x.dtype)))
        return ops.cast(logits, "float32") + ops.cast(self.bias, "float32")


class _PooledDenseHead(_ConfigLayer):
    """`pooled [.., H] -> [.., units]`: dropout then a dense layer; float32 scores."""

    def __init__(self, config: AlbertConfig | dict, units: int, dense_name: str, **kwargs):
        super().__init__(config, **kwargs)
        self.dense = self._dense(units, dense_name)
        self.dropout = keras.layers.Dropout(
            self.config.classifier_dropout_prob, dtype=self.dtype_policy, name="dropout"
        )

    def build(self, input_shape=None):
        self.dense.build((None, self.config.hidden_size))
        self.built = True

    def call(self, pooled, training=False):
        return ops.cast(self.dense(self.dropout(pooled, training=training)), "float32")


@keras.saving.register_keras_serializable(package="albert")
class SentenceOrderHead(_PooledDenseHead):
    """`pooled [B, H] -> logits [B, 2]` (float32); 0 = original order, 1 = swapped."""

    def __init__(self, config: AlbertConfig | dict, **kwargs):
        super().__init__(config, 2, "seq_relationship", **kwargs)


@keras.saving.register_keras_serializable(package="albert")
class SequenceClassificationHead(_PooledDenseHead):
    """`pooled [B, H] -> [B, num_labels]` float32 logits (or scores when `num_labels == 1`)."""

    def __init__(self, config: AlbertConfig | dict, num_labels: int, **kwargs):
        if num_labels < 1:
            raise ValueError(f"num_labels must be >= 1, got {num_labels}")
        super().__init__(config, num_labels, "classifier", **kwargs)
        self.num_labels = num_labels

    def get_config(self):
        return {**super().get_config(), "num_labels": self.num_labels}


@keras.saving.register_keras_serializable(package="albert")
class SpanExtractionHead(_ConfigLayer):
    """`(sequence [B, T, H], input_mask [B, T]) -> dict(start_logits, end_logits [B, T])` float32.

    Padding positions get -1e9 so they are never predicted.
    """

    def __init__(self, config: AlbertConfig | dict, **kwargs):
        super().__init__(config, **kwargs)
        self.dense = self._dense(2, "qa_outputs")

    def build(self, input_shape=None):
        self.dense.build((None, None, self.config.hidden_size))
        self.built = True

    def call(self, sequence, input_mask):
        logits = ops.cast(self.dense(sequence), "float32")
        valid = ops.cast(input_mask, "bool")
        start = ops.where(valid, logits[..., 0], NEG_INF)
        end = ops.where(valid, logits[..., 1], NEG_INF)
        return {"start_logits": start, "end_logits": end}


@keras.saving.register_keras_serializable(package="albert")
class MultipleChoiceHead(_PooledDenseHead):
    """`(pooled [B * C, H], num_choices C) -> logits [B, C]` float32 (one score per choice)."""

    def __init__(self, config: AlbertConfig | dict, **kwargs):
        super().__init__(config, 1, "classifier", **kwargs)

    def call(self, pooled, num_choices: int, training=False):
        return ops.reshape(super().call(pooled, training=training), (-1, num_choices))
