"""The ALBERT encoder: E->H projection, then L layers whose blocks are shared per
`config.sharing`."""

from __future__ import annotations

import keras

from model.network.config import AlbertConfig
from model.network.embeddings import as_config, truncated_normal
from model.network.transformer import AttentionBlock, FeedForwardBlock


@keras.saving.register_keras_serializable(package="albert")
class AlbertEncoder(keras.layers.Layer):
    """`(embeddings [B, T, E], mask) -> list of L+1 hidden states [B, T, H]`; `mask` is
    `model.network.transformer.attention_mask`'s (dense [B, 1, T, T], lengths [B] or a packed
    row's (instance_ids, cls_positions)).

    `attention_blocks[k]` / `ffn_blocks[k]` are the distinct parameter sets; layer `l`, sub-layer
    `i` runs `attention_blocks[attention_slots[l][i]]` then `ffn_blocks[ffn_slots[l][i]]`
    (see `model.network.config` for how sharing composes with groups). Hidden state 0 is the
    projected embedding output; state `l + 1` is the output of layer `l`.
    """

    def __init__(self, config: AlbertConfig | dict, **kwargs):
        super().__init__(**kwargs)
        self.config = as_config(config)
        cfg = self.config
        self.projection = None
        if cfg.has_embedding_projection:
            self.projection = keras.layers.Dense(
                cfg.hidden_size,
                kernel_initializer=truncated_normal(cfg),
                dtype=self.dtype_policy,
                name="embedding_hidden_mapping_in",
            )
        self.attention_blocks = [
            AttentionBlock(cfg, dtype=self.dtype_policy, name=f"attention_{k}")
            for k in range(cfg.num_block_sets("attention"))
        ]
        self.ffn_blocks = [
            FeedForwardBlock(cfg, dtype=self.dtype_policy, name=f"ffn_{k}")
            for k in range(cfg.num_block_sets("ffn"))
        ]
        self.attention_slots = cfg.block_slots("attention")
        self.ffn_slots = cfg.block_slots("ffn")

    def build(self, input_shape=None):
        if self.projection is not None:
            self.projection.build((None, None, self.config.embedding_size))
        for block in self.attention_blocks + self.ffn_blocks:
            block.build()
        self.built = True

    def call(self, embeddings, mask, training=False, output_scores=False):
        """The L+1 hidden states; with `output_scores`, `(hidden states, scores)`: each layer's
        attention scores `[B, N, T, T]` (`AttentionBlock`'s, of its last sub-layer)."""
        x = embeddings if self.projection is None else self.projection(embeddings)
        hidden_states, scores = [x], []
        for attention_slots, ffn_slots in zip(self.attention_slots, self.ffn_slots):
            for a, f in zip(attention_slots, ffn_slots):
                attention = self.attention_blocks[a]
                x = attention(x, mask, training=training, output_scores=output_scores)
                if output_scores:
                    x, layer_scores = x
                x = self.ffn_blocks[f](x, training=training)
            hidden_states.append(x)
            if output_scores:
                scores.append(layer_scores)
        return (hidden_states, scores) if output_scores else hidden_states

    def get_config(self):
        return {**super().get_config(), "config": self.config.model_dump()}
