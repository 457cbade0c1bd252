"""`AlbertBackbone`: embeddings + encoder + tanh pooler on `[CLS]` (Hugging Face's
`AlbertModel`)."""

from __future__ import annotations

import keras
from keras import ops

from model.network.config import AlbertConfig
from model.network.embeddings import AlbertEmbeddings, as_config, truncated_normal
from model.network.encoder import AlbertEncoder
from model.network.heads import gather_positions
from model.network.transformer import attention_mask


class ConfiguredModel(keras.Model):
    """A model built from an `AlbertConfig`, serialised with its config and dtype policy."""

    def __init__(self, config: AlbertConfig | dict, **kwargs):
        super().__init__(**kwargs)
        self.config = as_config(config)

    def get_config(self):
        return {
            "config": self.config.model_dump(),
            "name": self.name,
            "dtype": keras.saving.serialize_keras_object(self.dtype_policy),
        }

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        dtype = config.pop("dtype", None)
        if isinstance(dtype, dict):
            dtype = keras.saving.deserialize_keras_object(dtype)
        return cls(**config, dtype=dtype)


@keras.saving.register_keras_serializable(package="albert")
class AlbertBackbone(ConfiguredModel):
    """`call({input_ids, segment_ids, input_mask} int32 [B, T]) -> dict(sequence_output [B, T, H],
    pooled_output [B, H], hidden_states: L+1 x [B, T, H] when output_hidden_states,
    attention_scores: L x [B, N, T, T] when output_attention_scores (`AttentionBlock`'s))`.

    `segment_ids` defaults to zeros and `input_mask` to ones. Weights are created at construction.
    Packed rows (`model.input.packing`): with `instance_ids [B, T]` attention stays inside each
    instance (`attention_mask`), `position_ids [B, T]` restart with each, and `cls_positions [B, K]`
    give pooled_output [B, K, H], each instance's `[CLS]`.
    `embeddings`: an `AlbertEmbeddings` of another backbone to share (ELECTRA's generator uses the
    discriminator's); `pooler=False`: no pooler and no `pooled_output` (a generator has no use for
    them). Neither is serialised: a backbone built with them is part of a model that rebuilds it.
    """

    def __init__(self, config: AlbertConfig | dict, embeddings=None, pooler=True, **kwargs):
        super().__init__(config, **kwargs)
        cfg = self.config
        self.embeddings = embeddings or AlbertEmbeddings(
            cfg, dtype=self.dtype_policy, name="embeddings"
        )
        self.encoder = AlbertEncoder(cfg, dtype=self.dtype_policy, name="encoder")
        self.pooler = None
        if pooler:
            self.pooler = keras.layers.Dense(
                cfg.hidden_size,
                activation="tanh",
                kernel_initializer=truncated_normal(cfg),
                dtype=self.dtype_policy,
                name="pooler",
            )
        self.build()

    def build(self, input_shape=None):
        if not self.embeddings.built:  # a shared one is built already
            self.embeddings.build()
        self.encoder.build()
        if self.pooler is not None:
            self.pooler.build((None, self.config.hidden_size))
        self.built = True

    def call(
        self, inputs, training=False, output_hidden_states=False, output_attention_scores=False
    ):
        input_ids = inputs["input_ids"]
        segment_ids = inputs.get("segment_ids")
        if segment_ids is None:
            segment_ids = ops.zeros_like(input_ids)
        input_mask = inputs.get("input_mask")
        if input_mask is None:
            input_mask = ops.ones_like(input_ids)
        x = self.embeddings(
            input_ids, segment_ids, training=training, position_ids=inputs.get("position_ids")
        )
        cls_positions = inputs.get("cls_positions")
        mask = attention_mask(
            input_mask, inputs.get("instance_ids"), cls_positions, self.dtype_policy.compute_dtype
        )
        hidden_states = self.encoder(
            x, mask, training=training, output_scores=output_attention_scores
        )
        if output_attention_scores:
            hidden_states, attention_scores = hidden_states
        sequence_output = hidden_states[-1]
        outputs = {"sequence_output": sequence_output}
        if self.pooler is not None:
            cls = (
                sequence_output[:, 0, :]
                if cls_positions is None
                else gather_positions(sequence_output, cls_positions)
            )
            outputs["pooled_output"] = self.pooler(cls)
        if output_hidden_states:
            outputs["hidden_states"] = hidden_states
        if output_attention_scores:
            outputs["attention_scores"] = attention_scores
        return outputs
