"""ALBERT architecture configuration, the paper's presets, and parameter counting without weights.

Cross-layer sharing (`sharing`) composes with Hugging Face's groups as follows. The encoder runs
`num_hidden_layers` layers; layer `l` belongs to group `g(l) = int(l / (L / num_hidden_groups))`
(Hugging Face's formula) and applies `inner_group_num` sub-layers in sequence. Each sub-layer is an
attention block (Q, K, V, output dense, LayerNorm) followed by a feed-forward block (intermediate
dense, output dense, LayerNorm_1). A block that is *shared* takes its parameters from slot
`(g(l), inner)`; a block that is *not shared* from slot `(l, inner)`:

* `all`       - both blocks shared within a group (the ALBERT default; with one group every layer
                reuses the same parameters; this is exactly Hugging Face's / google-research's
                model);
* `attention` - attention shared, feed-forward per layer;
* `ffn`       - feed-forward shared, attention per layer;
* `none`      - every layer has its own parameters (BERT; equivalent to `all` with groups = layers).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from albert.errors import ConfigError

Sharing = Literal["all", "attention", "ffn", "none"]
Activation = Literal["gelu_new", "gelu", "relu"]


class AlbertConfig(BaseModel):
    """The architecture. Field names follow Hugging Face's `AlbertConfig` where one exists."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

    vocab_size: int = Field(30000, gt=0, description="SentencePiece vocabulary size V")
    embedding_size: int = Field(128, gt=0, description="factorised embedding size E")
    hidden_size: int = Field(768, gt=0, description="transformer width H")
    num_hidden_layers: int = Field(12, gt=0, description="number of layers L")
    num_attention_heads: int = Field(12, gt=0, description="attention heads (divide H)")
    intermediate_size: int = Field(3072, gt=0, description="feed-forward inner size")
    num_hidden_groups: int = Field(1, gt=0, description="parameter groups over the layers")
    inner_group_num: int = Field(1, gt=0, description="sub-layers applied per layer, in sequence")
    sharing: Sharing = Field(
        "all", description="which blocks are shared across the layers of a group"
    )
    hidden_act: Activation = Field("gelu_new", description="gelu_new = tanh-approximated GELU")
    hidden_dropout_prob: float = Field(0.0, ge=0.0, lt=1.0)
    attention_probs_dropout_prob: float = Field(0.0, ge=0.0, lt=1.0)
    classifier_dropout_prob: float = Field(
        0.1, ge=0.0, lt=1.0, description="dropout before task heads"
    )
    max_position_embeddings: int = Field(512, gt=0)
    type_vocab_size: int = Field(2, gt=0)
    initializer_range: float = Field(0.02, gt=0.0, description="truncated-normal stddev")
    layer_norm_eps: float = Field(1e-12, gt=0.0)
    embedding_projection: bool | None = Field(
        None,
        description="E->H dense after the embeddings; None = only when E != H (the reference); "
        "Hugging Face checkpoints always have it",
    )

    @model_validator(mode="after")
    def _check(self) -> AlbertConfig:
        if self.hidden_size % self.num_attention_heads:
            raise ValueError(
                f"hidden_size {self.hidden_size} is not a multiple of "
                f"num_attention_heads {self.num_attention_heads}"
            )
        if self.num_hidden_groups > self.num_hidden_layers:
            raise ValueError(
                f"num_hidden_groups {self.num_hidden_groups} exceeds "
                f"num_hidden_layers {self.num_hidden_layers}"
            )
        if self.embedding_projection is False and self.embedding_size != self.hidden_size:
            raise ValueError("embedding_projection=False needs embedding_size == hidden_size")
        return self

    @property
    def has_embedding_projection(self) -> bool:
        if self.embedding_projection is None:
            return self.embedding_size != self.hidden_size
        return self.embedding_projection

    @property
    def head_size(self) -> int:
        return self.hidden_size // self.num_attention_heads

    def group_of_layer(self, layer: int) -> int:
        """Hugging Face's group index of layer `layer` (float division, as in the reference)."""
        return int(layer / (self.num_hidden_layers / self.num_hidden_groups))

    def block_slots(self, block: Literal["attention", "ffn"]) -> list[list[int]]:
        """`slots[layer][inner]` -> index of the parameter set the block uses there."""
        shared = self.sharing == "all" or self.sharing == block
        inner = self.inner_group_num
        return [
            [(self.group_of_layer(layer) if shared else layer) * inner + i for i in range(inner)]
            for layer in range(self.num_hidden_layers)
        ]

    def num_block_sets(self, block: Literal["attention", "ffn"]) -> int:
        """How many distinct parameter sets of `block` the encoder holds."""
        shared = self.sharing == "all" or self.sharing == block
        return (self.num_hidden_groups if shared else self.num_hidden_layers) * self.inner_group_num


class PresetError(ConfigError):
    """An unknown preset name or an invalid override (a bad setting: exit code 2)."""


_BASE = {
    "embedding_size": 128,
    "hidden_size": 768,
    "num_hidden_layers": 12,
    "num_attention_heads": 12,
    "intermediate_size": 3072,
}
_LARGE = {
    "embedding_size": 128,
    "hidden_size": 1024,
    "num_hidden_layers": 24,
    "num_attention_heads": 16,
    "intermediate_size": 4096,
}
_XLARGE = {
    "embedding_size": 128,
    "hidden_size": 2048,
    "num_hidden_layers": 24,
    "num_attention_heads": 16,
    "intermediate_size": 8192,
}
_XXLARGE = {
    "embedding_size": 128,
    "hidden_size": 4096,
    "num_hidden_layers": 12,
    "num_attention_heads": 64,
    "intermediate_size": 16384,
}
_V1_DROPOUT = {"hidden_dropout_prob": 0.1, "attention_probs_dropout_prob": 0.1}
_NO_DROPOUT = {"hidden_dropout_prob": 0.0, "attention_probs_dropout_prob": 0.0}

PRESETS: dict[str, dict[str, Any]] = {
    # google-research/albert v1 (dropout 0.1, except xxlarge) and v2 (no dropout) configs.
    "albert-base-v1": {**_BASE, **_V1_DROPOUT},
    "albert-large-v1": {**_LARGE, **_V1_DROPOUT},
    "albert-xlarge-v1": {**_XLARGE, **_V1_DROPOUT},
    "albert-xxlarge-v1": {**_XXLARGE, **_NO_DROPOUT},
    "albert-base-v2": {**_BASE, **_NO_DROPOUT},
    "albert-large-v2": {**_LARGE, **_NO_DROPOUT},
    "albert-xlarge-v2": {**_XLARGE, **_NO_DROPOUT},
    "albert-xxlarge-v2": {**_XXLARGE, **_NO_DROPOUT},
    # BERT-style baselines of the paper's Table 1: E = H, nothing shared.
    "bert-base": {**_BASE, "embedding_size": 768, "sharing": "none", **_V1_DROPOUT},
    "bert-large": {**_LARGE, "embedding_size": 1024, "sharing": "none", **_V1_DROPOUT},
    # Tests and the `make run` demo; vocab_size comes from the trained SentencePiece model.
    "albert-tiny": dict(
        embedding_size=64,
        hidden_size=128,
        num_hidden_layers=4,
        num_attention_heads=2,
        intermediate_size=512,
        max_position_embeddings=512,
        **_NO_DROPOUT,
    ),
    "albert-nano": dict(
        embedding_size=16,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=128,
        **_NO_DROPOUT,
    ),
}
for _size in ("base", "large", "xlarge", "xxlarge"):
    PRESETS[f"albert-{_size}"] = PRESETS[f"albert-{_size}-v2"]


def get_preset(name: str, **overrides: Any) -> AlbertConfig:
    """The preset `name` with `overrides` (e.g. `vocab_size=8000`) applied and validated."""
    if name not in PRESETS:
        raise PresetError(f"unknown ALBERT preset {name!r}; known: {', '.join(sorted(PRESETS))}")
    try:
        return AlbertConfig(**{**PRESETS[name], **overrides})
    except ValidationError as error:
        raise PresetError(f"preset {name!r} with overrides {overrides}: {error}") from None


def parameter_counts(config: AlbertConfig) -> dict[str, int]:
    """Exact trainable-parameter counts by part, computed from the config alone (no weights).

    `backbone` = embeddings + projection + encoder + pooler (Hugging Face's `AlbertModel`);
    `pretraining` adds the masked-LM head (its decoder is tied to the word embeddings) and SOP head.
    """
    v, e, h, f = (
        config.vocab_size,
        config.embedding_size,
        config.hidden_size,
        config.intermediate_size,
    )
    embeddings = (v + config.max_position_embeddings + config.type_vocab_size) * e + 2 * e
    projection = (e * h + h) if config.has_embedding_projection else 0
    attention = 4 * (h * h + h) + 2 * h
    ffn = (h * f + f) + (f * h + h) + 2 * h
    encoder = (
        projection
        + attention * config.num_block_sets("attention")
        + ffn * config.num_block_sets("ffn")
    )
    pooler = h * h + h
    mlm_head = (h * e + e) + 2 * e + v
    sop_head = 2 * h + 2
    backbone = embeddings + encoder + pooler
    return {
        "embeddings": embeddings,
        "projection": projection,
        "attention_block": attention,
        "ffn_block": ffn,
        "encoder": encoder,
        "pooler": pooler,
        "mlm_head": mlm_head,
        "sop_head": sop_head,
        "backbone": backbone,
        "backbone_without_pooler": backbone - pooler,
        "pretraining": backbone + mlm_head + sop_head,
    }


# The paper's parameter counts (Lan et al. 2020, Tables 1, 3 and 4; ALBERT-base for the ablations),
# as (label, preset, overrides, millions, convention). `convention` is the count that reproduces
# the rounded figure: models with shared layers are counted with the pooler (Hugging Face's
# `AlbertModel`), the unshared BERT-style rows without it; None = the published architecture
# cannot give the figure (xlarge computes to 58.7M, xxlarge to 222.6M, as Hugging Face reports).
PAPER_PARAMETERS: list[tuple[str, str, dict[str, Any], int, str | None]] = [
    ("ALBERT base", "albert-base", {}, 12, "backbone"),
    ("ALBERT large", "albert-large", {}, 18, "backbone"),
    ("ALBERT xlarge", "albert-xlarge", {}, 60, None),
    ("ALBERT xxlarge", "albert-xxlarge", {}, 235, None),
    ("BERT base", "bert-base", {}, 108, "backbone_without_pooler"),
    ("BERT large", "bert-large", {}, 334, "backbone_without_pooler"),
    *[
        (
            f"base E={e} {label}",
            "albert-base",
            {"embedding_size": e, "sharing": sharing},
            millions,
            "backbone_without_pooler" if sharing == "none" else "backbone",
        )
        for e, sharing, label, millions in [
            (64, "none", "not-shared", 87),
            (128, "none", "not-shared", 89),
            (256, "none", "not-shared", 93),
            (768, "none", "not-shared", 108),
            (64, "all", "all-shared", 10),
            (128, "all", "all-shared", 12),
            (256, "all", "all-shared", 16),
            (768, "all", "all-shared", 31),
            (768, "attention", "shared-attention", 83),
            (768, "ffn", "shared-FFN", 57),
            (128, "attention", "shared-attention", 64),
            (128, "ffn", "shared-FFN", 38),
        ]
    ],
]
