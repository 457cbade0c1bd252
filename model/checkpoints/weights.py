"""Our variables' names in TF1 and Hugging Face checkpoints, and the strict copy of a checkpoint's
tensors into an `AlbertPretrainingModel`.

Every weight of the model must be found in the checkpoint and every checkpoint tensor must be
used (the loaders drop optimizer slots, `global_step` and Hugging Face's tied decoder copies
first); anything else is a `ConversionError` naming the tensors.

Parameter set `k` of a block maps to group `k // inner_group_num`, inner layer
`k % inner_group_num`; so `sharing="all"` maps to the checkpoint's groups and `sharing="none"`
exports as one group per layer. `attention`/`ffn` sharing has no equivalent in either format.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

import keras
import numpy as np

from model.network.config import AlbertConfig
from model.network.pretraining_model import AlbertPretrainingModel

logger = logging.getLogger(__name__)


class ConversionError(ValueError):
    """A checkpoint does not match the model: missing/unused tensors, shapes, or an unknown
    format."""


@dataclass(frozen=True)
class WeightEntry:
    """One model variable and its names in the TF1 and Hugging Face checkpoints.

    Transposes are relative to the Keras layout (`Dense` kernels are `[in, out]`).
    """

    variable: Any
    tf1: str
    hf: str
    tf1_transpose: bool = False
    hf_transpose: bool = False


# The reference's `albert_config.json` fields that are ours under the same name and meaning (Hugging
# Face's `config.json` has them too).
REFERENCE_CONFIG_FIELDS = (
    "vocab_size",
    "embedding_size",
    "hidden_size",
    "num_hidden_layers",
    "num_attention_heads",
    "intermediate_size",
    "num_hidden_groups",
    "inner_group_num",
    "hidden_dropout_prob",
    "attention_probs_dropout_prob",
    "max_position_embeddings",
    "type_vocab_size",
    "initializer_range",
)


def config_fields(values: dict[str, Any], extra: tuple[str, ...] = ()) -> dict[str, Any]:
    """The fields of a checkpoint's config dict that carry over to `AlbertConfig` unchanged:
    `REFERENCE_CONFIG_FIELDS` and `extra`, where set and not null."""
    return {
        name: values[name]
        for name in (*REFERENCE_CONFIG_FIELDS, *extra)
        if values.get(name) is not None
    }


def projection_flag(values: dict[str, Any], has_projection: bool) -> bool | None:
    """`embedding_projection` for a checkpoint: None where it is the default (present iff
    E != H)."""
    hidden = values.get("hidden_size", 768)
    default = values.get("embedding_size", hidden) != hidden
    return None if has_projection == default else has_projection


def _block_location(config: AlbertConfig, set_index: int) -> tuple[int, int]:
    return set_index // config.inner_group_num, set_index % config.inner_group_num


def checkpoint_groups(config: AlbertConfig) -> int:
    """`num_hidden_groups` of the equivalent TF1/Hugging Face model (error if there is none)."""
    if config.sharing in ("attention", "ffn"):
        raise ConversionError(
            f"sharing={config.sharing!r} has no equivalent in TF1 or Hugging Face checkpoints, "
            "which share whole layers; only sharing='all' or 'none' can be converted"
        )
    return config.num_block_sets("attention") // config.inner_group_num


def _dense(layer, tf1: str, hf: str) -> list[WeightEntry]:
    return [
        WeightEntry(layer.kernel, f"{tf1}/kernel", f"{hf}.weight", hf_transpose=True),
        WeightEntry(layer.bias, f"{tf1}/bias", f"{hf}.bias"),
    ]


def _norm(layer, tf1: str, hf: str) -> list[WeightEntry]:
    return [
        WeightEntry(layer.gamma, f"{tf1}/gamma", f"{hf}.weight"),
        WeightEntry(layer.beta, f"{tf1}/beta", f"{hf}.bias"),
    ]


def weight_entries(model: AlbertPretrainingModel) -> list[WeightEntry]:
    """Every variable of `model` with its reference (TF1) and Hugging Face names."""
    entries = backbone_entries(model.backbone)

    mlm = model.mlm_head
    entries += _dense(mlm.dense, "cls/predictions/transform/dense", "predictions.dense")
    entries += _norm(mlm.layer_norm, "cls/predictions/transform/LayerNorm", "predictions.LayerNorm")
    entries.append(WeightEntry(mlm.bias, "cls/predictions/output_bias", "predictions.bias"))
    sop = model.sop_head.dense
    entries.append(
        WeightEntry(
            sop.kernel,
            "cls/seq_relationship/output_weights",
            "sop_classifier.classifier.weight",
            True,
            True,
        )
    )
    entries.append(
        WeightEntry(sop.bias, "cls/seq_relationship/output_bias", "sop_classifier.classifier.bias")
    )
    return entries


def backbone_entries(backbone) -> list[WeightEntry]:
    """Every variable of an `AlbertBackbone` with its reference (TF1) and Hugging Face names
    (`albert.*`, what every Hugging Face ALBERT model holds)."""
    config = backbone.config
    checkpoint_groups(config)
    entries: list[WeightEntry] = []

    emb = backbone.embeddings
    for table in ("word_embeddings", "position_embeddings", "token_type_embeddings"):
        entries.append(
            WeightEntry(
                getattr(emb, table).embeddings,
                f"bert/embeddings/{table}",
                f"albert.embeddings.{table}.weight",
            )
        )
    entries += _norm(emb.layer_norm, "bert/embeddings/LayerNorm", "albert.embeddings.LayerNorm")
    encoder = backbone.encoder
    if encoder.projection is not None:
        entries += _dense(
            encoder.projection,
            "bert/encoder/embedding_hidden_mapping_in",
            "albert.encoder.embedding_hidden_mapping_in",
        )
    for k, block in enumerate(encoder.attention_blocks):
        group, inner = _block_location(config, k)
        tf1 = f"bert/encoder/transformer/group_{group}/inner_group_{inner}"
        hf = f"albert.encoder.albert_layer_groups.{group}.albert_layers.{inner}"
        for name in ("query", "key", "value"):
            entries += _dense(
                getattr(block, name), f"{tf1}/attention_1/self/{name}", f"{hf}.attention.{name}"
            )
        entries += _dense(
            block.output_dense, f"{tf1}/attention_1/output/dense", f"{hf}.attention.dense"
        )
        entries += _norm(block.layer_norm, f"{tf1}/LayerNorm", f"{hf}.attention.LayerNorm")
    for k, block in enumerate(encoder.ffn_blocks):
        group, inner = _block_location(config, k)
        tf1 = f"bert/encoder/transformer/group_{group}/inner_group_{inner}"
        hf = f"albert.encoder.albert_layer_groups.{group}.albert_layers.{inner}"
        entries += _dense(block.intermediate, f"{tf1}/ffn_1/intermediate/dense", f"{hf}.ffn")
        entries += _dense(
            block.output_dense, f"{tf1}/ffn_1/intermediate/output/dense", f"{hf}.ffn_output"
        )
        entries += _norm(block.layer_norm, f"{tf1}/LayerNorm_1", f"{hf}.full_layer_layer_norm")
    entries += _dense(backbone.pooler, "bert/pooler/dense", "albert.pooler")
    return entries


def assign_weights(
    model: AlbertPretrainingModel,
    tensors: dict[str, np.ndarray],
    fmt: str,
    source: str,
    optional_prefixes: tuple[str, ...] = (),
) -> None:
    """Copy `tensors` (named in format `fmt`: 'tf1' or 'hf') into `model`, strictly.

    Entries whose name starts with one of `optional_prefixes` may be absent (logged, left at
    their initial values), e.g. the heads when loading a Hugging Face `AlbertModel`.
    """
    entries = weight_entries(model)
    missing, used = [], set()
    for entry in entries:
        name = getattr(entry, fmt)
        if name not in tensors:
            missing.append(name)
            continue
        value = np.asarray(tensors[name])
        if getattr(entry, f"{fmt}_transpose"):
            value = value.T
        if tuple(value.shape) != tuple(entry.variable.shape):
            raise ConversionError(
                f"{source}: tensor {name} has shape {tuple(value.shape)}, the "
                f"model expects {tuple(entry.variable.shape)}"
            )
        entry.variable.assign(value.astype(keras.backend.standardize_dtype(entry.variable.dtype)))
        used.add(name)
    required = [name for name in missing if not name.startswith(optional_prefixes)]
    if required:
        raise ConversionError(f"{source}: missing tensors {required}")
    if missing:
        logger.warning(
            "%s: %d head tensors absent (left initialised): %s", source, len(missing), missing
        )
    unused = sorted(set(tensors) - used)
    if unused:
        raise ConversionError(f"{source}: tensors not used by the model {unused}")
