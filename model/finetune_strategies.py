"""The fine-tuning strategies of Sun et al. (2019), "How to Fine-Tune BERT for Text Classification".

* Long texts (`truncate_tokens`): keep the head, the tail, or the head and the tail of a text
  (head 128 + tail 382 of 510 in the paper; the tail takes whatever the head leaves).
* Features from different layers (`LayerFeatures`): the pooled `[CLS]` (ALBERT's default), the
  last layer's `[CLS]`, the concatenation or mean of the last four layers' `[CLS]`, or the mean of
  the last layer over real tokens.
* Layer-wise decreasing learning rate (`layer_depths`, `LayerwiseAdamW`): a variable at depth d
  learns at lr * xi^d. Depth 0 is the task head and pooler; an encoder parameter set is at the
  depth of the highest layer that applies it (L - l for layer l counted from 0), so without
  sharing layer l gets xi^(L - l) as in the paper, and with ALBERT's full sharing the one shared
  block is at depth 1; the embeddings (and E->H projection) sit one below the deepest encoder set.
  With all layers shared this is head / encoder / embeddings at lr, lr*xi, lr*xi^2. The decay
  scales each variable's *learning rate*, not its gradient: Adam is invariant to gradient scale.
  Decoupled weight decay keeps the base rate.
* A lower learning rate against catastrophic forgetting is `--learning-rate` (the paper: 2e-5).
* Further pretraining on task text (`task_corpus` + `model.pretrain` from the checkpoint) and
  multi-task fine-tuning are driven by `model.finetune`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Literal

import keras
from keras import ops

from model.config import AlbertConfig

Truncation = Literal["head", "tail", "head_tail"]
Features = Literal["pooled", "cls", "concat_last4", "mean_last4", "mean_tokens"]


def truncate_tokens(
    tokens: Sequence, budget: int, strategy: Truncation = "head", head_tokens: int = 128
) -> list:
    """At most `budget` tokens: the first (`head`), the last (`tail`), or the first
    `min(head_tokens, budget)` plus the last of the rest (`head_tail`)."""
    tokens = list(tokens)
    if len(tokens) <= budget:
        return tokens
    if budget <= 0:
        return []
    if strategy == "head":
        return tokens[:budget]
    if strategy == "tail":
        return tokens[-budget:]
    if strategy == "head_tail":
        head = min(head_tokens, budget)
        tail = budget - head
        return tokens[:head] + (tokens[-tail:] if tail else [])
    raise ValueError(f"unknown truncation strategy {strategy!r}")


def pair_budgets(len_a: int, len_b: int, budget: int) -> tuple[int, int]:
    """Token budgets of two segments sharing `budget`: the longer loses tokens first (BERT's rule)."""
    while len_a + len_b > budget:
        if len_a > len_b:
            len_a -= 1
        else:
            len_b -= 1
    return len_a, len_b


def truncate_pair(
    a: Sequence,
    b: Sequence | None,
    budget: int,
    strategy: Truncation = "head",
    head_tokens: int = 128,
) -> tuple[list, list | None]:
    """Truncate one segment or a pair to `budget` tokens, each segment by `strategy`."""
    if b is None:
        return truncate_tokens(a, budget, strategy, head_tokens), None
    budget_a, budget_b = pair_budgets(len(a), len(b), budget)
    return (
        truncate_tokens(a, budget_a, strategy, head_tokens),
        truncate_tokens(b, budget_b, strategy, head_tokens),
    )


def feature_size(features: Features, hidden_size: int, num_layers: int) -> int:
    """Width of the features: the last four hidden states (fewer in models of < 3 layers) concatenated,
    else one hidden state."""
    return min(4, num_layers + 1) * hidden_size if features == "concat_last4" else hidden_size


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


def needs_hidden_states(features: Features) -> bool:
    return features in ("concat_last4", "mean_last4")


def layer_depths(config: AlbertConfig, variable_paths: Sequence[str]) -> dict[str, int]:
    """Depth of each variable for layer-wise learning rates (see the module docstring)."""
    layers = config.num_hidden_layers
    set_depth: dict[tuple[str, int], int] = {}
    for block in ("attention", "ffn"):
        for layer, slots in enumerate(config.block_slots(block)):
            for slot in slots:
                set_depth[(block, slot)] = min(set_depth.get((block, slot), layers), layers - layer)
    embeddings_depth = max(set_depth.values()) + 1
    depths = {}
    for path in variable_paths:
        match = re.search(r"/encoder/(attention|ffn)_(\d+)/", path)
        if match:
            depths[path] = set_depth[(match.group(1), int(match.group(2)))]
        elif "/embeddings/" in path or "embedding_hidden_mapping_in" in path:
            depths[path] = embeddings_depth
        else:
            depths[path] = 0
    return depths


@keras.saving.register_keras_serializable(package="albert")
class LayerwiseAdamW(keras.optimizers.AdamW):
    """AdamW whose learning rate for a variable is multiplied by `multipliers[variable.path]`."""

    def __init__(self, multipliers: dict[str, float] | None = None, **kwargs):
        super().__init__(**kwargs)
        self.multipliers = dict(multipliers or {})

    def build(self, var_list):
        if self.built:
            return
        super().build(var_list)
        self._lr_scales = [self.multipliers.get(v.path, 1.0) for v in var_list]

    def update_step(self, gradient, variable, learning_rate):
        scale = self._lr_scales[self._get_variable_index(variable)]
        if scale != 1.0:
            learning_rate = ops.multiply(ops.cast(learning_rate, variable.dtype), scale)
        return super().update_step(gradient, variable, learning_rate)

    def get_config(self):
        return {**super().get_config(), "multipliers": self.multipliers}


def layerwise_multipliers(
    config: AlbertConfig, variable_paths: Sequence[str], decay: float
) -> dict[str, float]:
    """lr multiplier decay^depth per variable path."""
    return {path: decay**depth for path, depth in layer_depths(config, variable_paths).items()}
