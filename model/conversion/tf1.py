"""The original google-research TF1 checkpoints (and their `albert_config.json`) as
`AlbertPretrainingModel`s (names and strict copying: `model.checkpoints.weights`)."""

from __future__ import annotations

import json
import os
from typing import Any

from albert.fs import exists, join, open_file
from model.checkpoints.weights import (
    ConversionError,
    assign_weights,
    config_fields,
    projection_flag,
)
from model.network.config import AlbertConfig
from model.network.pretraining_model import AlbertPretrainingModel

TF1_IGNORED_SUFFIXES = ("/adam_m", "/adam_v")
TF1_IGNORED_NAMES = ("global_step",)
TF1_CONFIG_FILES = ("albert_config.json", "bert_config.json", "config.json")


def config_from_tf1(values: dict[str, Any], has_projection: bool, source: str) -> AlbertConfig:
    """Our config for a reference `albert_config.json` (its `gelu` is the tanh approximation)."""
    defaults = {"net_structure_type": 0, "down_scale_factor": 1, "layers_to_keep": []}
    unsupported = {
        key: values[key]
        for key, default in defaults.items()
        if values.get(key, default) not in (default, None)
    }
    if unsupported:
        raise ConversionError(f"{source}: unsupported reference options {unsupported}")
    act = values.get("hidden_act", "gelu")
    acts = {"gelu": "gelu_new", "relu": "relu"}
    if act not in acts:
        raise ConversionError(f"{source}: unsupported hidden_act {act!r}")
    kwargs = config_fields(values)
    kwargs.setdefault("embedding_size", kwargs.get("hidden_size", 768))
    return AlbertConfig(
        **kwargs,
        hidden_act=acts[act],
        sharing="all",
        embedding_projection=projection_flag(kwargs, has_projection),
    )


def _find_tf1_config(prefix: str) -> str:
    directory = os.path.dirname(prefix) or "."
    for name in TF1_CONFIG_FILES:
        candidate = join(directory, name)
        if exists(candidate):
            return candidate
    raise ConversionError(
        f"{prefix}: no config next to the checkpoint (looked for "
        f"{', '.join(TF1_CONFIG_FILES)} in {directory}); pass config="
    )


def load_tf1_checkpoint(
    prefix: str, config: AlbertConfig | str | None = None
) -> AlbertPretrainingModel:
    """An `AlbertPretrainingModel` from a google-research ALBERT TF1 checkpoint prefix.

    `config`: an `AlbertConfig`, a path to `albert_config.json`, or None to find it next to the
    checkpoint. Reading uses `tf.train.load_checkpoint` (TensorFlow is always installed).
    """
    import tensorflow as tf  # heavy: only TF1 checkpoints need it (JAX runs never load it)

    try:
        reader = tf.train.load_checkpoint(prefix)
    except (tf.errors.NotFoundError, tf.errors.DataLossError, ValueError) as error:
        raise ConversionError(f"{prefix}: not a readable TF checkpoint ({error})") from None
    names = [
        name
        for name in reader.get_variable_to_shape_map()
        if name not in TF1_IGNORED_NAMES and not name.endswith(TF1_IGNORED_SUFFIXES)
    ]
    has_projection = "bert/encoder/embedding_hidden_mapping_in/kernel" in names
    if not isinstance(config, AlbertConfig):
        config_url = config or _find_tf1_config(prefix)
        with open_file(config_url, "rb") as handle:
            config = config_from_tf1(json.load(handle), has_projection, config_url)
    elif config.has_embedding_projection != has_projection:
        values = config.model_dump()
        try:
            config = AlbertConfig(
                **{**values, "embedding_projection": projection_flag(values, has_projection)}
            )
        except ValueError as error:
            raise ConversionError(
                f"{prefix}: checkpoint does not fit the config: {error}"
            ) from None
    model = AlbertPretrainingModel(config)
    tensors = {name: reader.get_tensor(name) for name in names}
    assign_weights(model, tensors, "tf1", prefix, optional_prefixes=("cls/",))
    return model
