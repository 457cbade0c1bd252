"""Features from different layers, a strategy of Sun et al. (2019): the classifier reads the pooled
`[CLS]` (ALBERT's default), the last layer's `[CLS]`, the concatenation or mean of the last four
layers' `[CLS]`, or the mean of the last layer over real tokens."""

from __future__ import annotations

import keras
from keras import ops

from model.finetune.config import Features


def feature_size(features: Features, hidden_size: int, num_layers: int) -> int:
    """Width of the features: the last four hidden states (fewer in models of < 3 layers)
    concatenated, else one hidden state."""
    return min(4, num_layers + 1) * hidden_size if features == "concat_last4" else hidden_size


def needs_hidden_states(features: Features) -> bool:
    return features in ("concat_last4", "mean_last4")


@keras.saving.register_keras_serializable(package="albert")
class LayerFeatures(keras.layers.Layer):
    """Backbone outputs -> one feature vector per sequence, chosen by `features`."""

    def __init__(self, features: Features = "pooled", **kwargs):
        super().__init__(**kwargs)
        self.features = features

    def call(self, outputs, input_mask):
        if self.features == "pooled":
            return outputs["pooled_output"]
        if self.features == "cls":
            return outputs["sequence_output"][:, 0, :]
        if self.features == "mean_tokens":
            mask = ops.cast(input_mask, outputs["sequence_output"].dtype)[:, :, None]
            total = ops.sum(outputs["sequence_output"] * mask, axis=1)
            return total / ops.maximum(ops.sum(mask, axis=1), 1.0)
        last_four = [state[:, 0, :] for state in outputs["hidden_states"][-4:]]
        if self.features == "concat_last4":
            return ops.concatenate(last_four, axis=-1)
        if self.features == "mean_last4":
            return ops.mean(ops.stack(last_four, axis=0), axis=0)
        raise ValueError(f"unknown features {self.features!r}")

    def get_config(self):
        return {**super().get_config(), "features": self.features}
