"""The fine-tuning optimizer: AdamW with linear warmup and linear decay, and the layer-wise
decreasing learning rate of Sun et al. (2019).

Two linear schedules (`--schedule`): `reference`, google-research/albert's and BERT's (the decay
runs over all the steps from step 0 and the warmup replaces its first steps, so the rate after
warmup starts at (T - W) / T of the peak; `model.optimization.optimizers.WarmupPolynomialDecay`),
and
`after_warmup`, Hugging Face's `get_linear_schedule_with_warmup` (`Trainer`'s `linear`: the decay
starts at the peak when warmup ends; `WarmupThenLinearDecay`).

A variable at depth d learns at lr * xi^d. Depth 0 is the task head and pooler; an encoder parameter
set is at the depth of the highest layer that applies it (L - l for layer l counted from 0), so
without sharing layer l gets xi^(L - l) as in the paper, and with ALBERT's full sharing the one
shared block is at depth 1; the embeddings (and E->H projection) sit one below the deepest encoder
set. With all layers shared this is head / encoder / embeddings at lr, lr*xi, lr*xi^2. The decay
scales each variable's *learning rate*, not its gradient: Adam is invariant to gradient scale.
Decoupled weight decay keeps the base rate. A lower learning rate against catastrophic forgetting
is `--learning-rate` (the paper: 2e-5)."""

from __future__ import annotations

import re
from collections.abc import Sequence

import keras
from keras import ops

from model.finetune.config import Hyperparameters, Schedule
from model.network.config import AlbertConfig
from model.optimization.optimizers import DEFAULT_EXCLUDE, AdamW, WarmupPolynomialDecay


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


def layerwise_multipliers(
    config: AlbertConfig, variable_paths: Sequence[str], decay: float
) -> dict[str, float]:
    """lr multiplier decay^depth per variable path."""
    return {path: decay**depth for path, depth in layer_depths(config, variable_paths).items()}


@keras.saving.register_keras_serializable(package="albert")
class LayerwiseAdamW(AdamW):
    """AdamW (torch's ε placement, `model.optimization.optimizers.AdamW`) whose learning rate for a
    variable is multiplied by `multipliers[variable.path]`."""

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


@keras.saving.register_keras_serializable(package="albert")
class WarmupThenLinearDecay(keras.optimizers.schedules.LearningRateSchedule):
    """peak * step / warmup during the warmup, then linear decay from the peak to 0 over the steps
    after it: transformers' `get_linear_schedule_with_warmup` (`--schedule after_warmup`)."""

    def __init__(self, peak: float, warmup_steps: int, total_steps: int):
        self.peak, self.warmup_steps, self.total_steps = (
            float(peak),
            int(warmup_steps),
            int(total_steps),
        )

    def __call__(self, step):
        step = ops.cast(step, "float32")
        warmup = self.peak * step / float(max(self.warmup_steps, 1))
        left = (self.total_steps - step) / float(max(self.total_steps - self.warmup_steps, 1))
        return ops.where(
            ops.less(step, float(self.warmup_steps)), warmup, self.peak * ops.maximum(left, 0.0)
        )

    def get_config(self):
        return {
            "peak": self.peak,
            "warmup_steps": self.warmup_steps,
            "total_steps": self.total_steps,
        }


def make_optimizer(
    model: keras.Model,
    hp: Hyperparameters,
    weight_decay: float,
    layer_decay: float,
    steps: int,
    schedule: Schedule = "reference",
) -> LayerwiseAdamW:
    """AdamW over `steps` (warmup then linear decay, `schedule` as the module docstring says),
    layer-wise rates when `layer_decay` < 1."""
    kind = WarmupPolynomialDecay if schedule == "reference" else WarmupThenLinearDecay
    rate = kind(hp.learning_rate, min(hp.warmup_steps, steps), steps)
    multipliers = {}
    if layer_decay < 1.0:
        paths = [v.path for v in model.trainable_variables]
        multipliers = layerwise_multipliers(model.backbone.config, paths, layer_decay)
    optimizer = LayerwiseAdamW(
        multipliers,
        learning_rate=rate,
        weight_decay=weight_decay,
        epsilon=1e-6,
        global_clipnorm=1.0,
    )
    optimizer.exclude_from_weight_decay(var_names=list(DEFAULT_EXCLUDE))
    return optimizer
