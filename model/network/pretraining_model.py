"""`AlbertPretrainingModel`: the backbone with the masked-LM and sentence-order heads."""

from __future__ import annotations

import keras

from model.network.backbone import AlbertBackbone, ConfiguredModel
from model.network.config import AlbertConfig
from model.network.heads import MaskedLMHead, SentenceOrderHead, gather_positions

MODEL_INPUTS = ("input_ids", "input_mask", "segment_ids", "masked_lm_positions")
PACKED_INPUTS = ("position_ids", "instance_ids", "cls_positions")
"""What packed rows (`model.input.packing`) add to `MODEL_INPUTS`."""


def model_inputs(batch: dict) -> dict:
    """The features of a pretraining batch that `AlbertPretrainingModel` takes (no labels), with
    `PACKED_INPUTS` when the batch is of packed rows."""
    names = MODEL_INPUTS + (PACKED_INPUTS if "instance_ids" in batch else ())
    return {name: batch[name] for name in names}


@keras.saving.register_keras_serializable(package="albert")
class AlbertPretrainingModel(ConfiguredModel):
    """`call({input_ids, segment_ids, input_mask [B, T], masked_lm_positions [B, P]})
    -> dict(mlm_logits [B, P, V], sop_logits [B, 2])`, both float32; packed rows of up to K
    instances (with `PACKED_INPUTS`, see `AlbertBackbone`): sop_logits [B, K, 2], one per instance.

    The masked-LM head runs only at `masked_lm_positions`; without them it runs at every token
    (`mlm_logits [B, T, V]`). The output embedding is tied to `backbone.embeddings.word_embeddings`.
    """

    def __init__(self, config: AlbertConfig | dict, **kwargs):
        super().__init__(config, **kwargs)
        self.backbone = AlbertBackbone(self.config, dtype=self.dtype_policy, name="albert")
        self.mlm_head = MaskedLMHead(self.config, dtype=self.dtype_policy, name="predictions")
        self.sop_head = SentenceOrderHead(
            self.config, dtype=self.dtype_policy, name="sop_classifier"
        )
        self.build()

    def build(self, input_shape=None):
        self.mlm_head.build()
        self.sop_head.build()
        self.built = True

    @property
    def word_embeddings(self):
        """The `[V, E]` embedding table shared by the input and the masked-LM output."""
        return self.backbone.embeddings.word_embeddings.embeddings

    def call(self, inputs, training=False):
        outputs = self.backbone(inputs, training=training)
        hidden = outputs["sequence_output"]
        positions = inputs.get("masked_lm_positions")
        if positions is not None:
            hidden = gather_positions(hidden, positions)
        return {
            "mlm_logits": self.mlm_head(hidden, self.word_embeddings),
            "sop_logits": self.sop_head(outputs["pooled_output"], training=training),
        }
