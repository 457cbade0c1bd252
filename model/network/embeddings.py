"""Factorised ALBERT embeddings: word (V x E) + position + token type, then LayerNorm and
dropout."""

from __future__ import annotations

import keras
from keras import ops

from model.network.config import AlbertConfig


def truncated_normal(config: AlbertConfig) -> keras.initializers.Initializer:
    """The reference's initializer for every kernel and embedding table."""
    return keras.initializers.TruncatedNormal(stddev=config.initializer_range)


def as_config(config: AlbertConfig | dict) -> AlbertConfig:
    """Accept the config object or its `model_dump()` (as stored by `get_config`)."""
    return config if isinstance(config, AlbertConfig) else AlbertConfig(**config)


@keras.saving.register_keras_serializable(package="albert")
class AlbertEmbeddings(keras.layers.Layer):
    """`(input_ids, segment_ids, position_ids=None) [B, T] -> [B, T, E]`; positions are 0..T-1
    unless `position_ids` gives them (packed rows: they restart with each instance)."""

    def __init__(self, config: AlbertConfig | dict, **kwargs):
        super().__init__(**kwargs)
        self.config = as_config(config)
        cfg = self.config
        init = truncated_normal(cfg)
        self.word_embeddings = keras.layers.Embedding(
            cfg.vocab_size,
            cfg.embedding_size,
            embeddings_initializer=init,
            dtype=self.dtype_policy,
            name="word_embeddings",
        )
        self.position_embeddings = keras.layers.Embedding(
            cfg.max_position_embeddings,
            cfg.embedding_size,
            embeddings_initializer=init,
            dtype=self.dtype_policy,
            name="position_embeddings",
        )
        self.token_type_embeddings = keras.layers.Embedding(
            cfg.type_vocab_size,
            cfg.embedding_size,
            embeddings_initializer=init,
            dtype=self.dtype_policy,
            name="token_type_embeddings",
        )
        self.layer_norm = keras.layers.LayerNormalization(
            epsilon=cfg.layer_norm_eps, dtype=self.dtype_policy, name="layer_norm"
        )
        self.dropout = keras.layers.Dropout(
            cfg.hidden_dropout_prob, dtype=self.dtype_policy, name="dropout"
        )

    def build(self, input_shape=None):
        for table in (self.word_embeddings, self.position_embeddings, self.token_type_embeddings):
            table.build((None, None))
        self.layer_norm.build((None, None, self.config.embedding_size))
        self.built = True

    def call(self, input_ids, segment_ids, training=False, position_ids=None):
        seq_len = ops.shape(input_ids)[1]
        if isinstance(seq_len, int) and seq_len > self.config.max_position_embeddings:
            raise ValueError(
                f"sequence length {seq_len} exceeds max_position_embeddings "
                f"{self.config.max_position_embeddings}"
            )
        positions = (
            ops.expand_dims(ops.arange(seq_len, dtype="int32"), 0)
            if position_ids is None
            else ops.cast(position_ids, "int32")
        )
        x = (
            self.word_embeddings(input_ids)
            + self.token_type_embeddings(segment_ids)
            + self.position_embeddings(positions)
        )
        return self.dropout(self.layer_norm(x), training=training)

    def get_config(self):
        return {**super().get_config(), "config": self.config.model_dump()}
