"""Checkpoint interop: `.keras` files, Hugging Face `AlbertForPreTraining` directories, and the
original google-research TF1 checkpoints, all mapped onto `AlbertPretrainingModel`.

Every weight of the model must be found in the checkpoint and every checkpoint tensor must be
used (optimizer slots `adam_m`/`adam_v`, `global_step` and Hugging Face's tied decoder copies
excepted); anything else is a `ConversionError` naming the tensors.

Parameter set `k` of a block maps to group `k // inner_group_num`, inner layer
`k % inner_group_num`; so `sharing="all"` maps to the checkpoint's groups and `sharing="none"`
exports as one group per layer. `attention`/`ffn` sharing has no equivalent in either format.
"""

from __future__ import annotations

import io
import json
import logging
import os
import shutil
import tempfile
from dataclasses import dataclass
from typing import Any

import keras
import numpy as np

from albert.fs import exists, filesystem, join, open_file
from albert.outputs import atomic_output_dir
from model.config import AlbertConfig
from model.pretraining_model import AlbertPretrainingModel

logger = logging.getLogger(__name__)

HF_WEIGHT_FILES = ("model.safetensors", "model.safetensors.index.json", "pytorch_model.bin")
# Hugging Face: the decoder is tied to the word embeddings / output bias; buffers are not weights.
HF_IGNORED_SUFFIXES = (
    "predictions.decoder.weight",
    "predictions.decoder.bias",
    ".position_ids",
    ".token_type_ids",
)
TF1_IGNORED_SUFFIXES = ("/adam_m", "/adam_v")
TF1_IGNORED_NAMES = ("global_step",)
TF1_CONFIG_FILES = ("albert_config.json", "bert_config.json", "config.json")


class ConversionError(ValueError):
    """A checkpoint does not match the model: missing/unused tensors, shapes, or an unknown format."""


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


def projection_flag(values: dict[str, Any], has_projection: bool) -> bool | None:
    """`embedding_projection` for a checkpoint: None where it is the default (present iff E != H)."""
    hidden = values.get("hidden_size", 768)
    default = values.get("embedding_size", hidden) != hidden
    return None if has_projection == default else has_projection


def _block_location(config: AlbertConfig, set_index: int) -> tuple[int, int]:
    return set_index // config.inner_group_num, set_index % config.inner_group_num


def checkpoint_groups(config: AlbertConfig) -> int:
    """`num_hidden_groups` of the equivalent TF1/Hugging Face model (error if there is none)."""
    if config.sharing in ("attention", "ffn"):
        raise ConversionError(
            f"sharing={config.sharing!r} has no equivalent in TF1 or Hugging Face checkpoints, which "
            "share whole layers; only sharing='all' or 'none' can be converted"
        )
    return config.num_block_sets("attention") // config.inner_group_num


def weight_entries(model: AlbertPretrainingModel) -> list[WeightEntry]:
    """Every variable of `model` with its reference (TF1) and Hugging Face names."""
    config = model.config
    checkpoint_groups(config)
    backbone = model.backbone
    entries: list[WeightEntry] = []

    def dense(layer, tf1: str, hf: str) -> None:
        entries.append(
            WeightEntry(layer.kernel, f"{tf1}/kernel", f"{hf}.weight", hf_transpose=True)
        )
        entries.append(WeightEntry(layer.bias, f"{tf1}/bias", f"{hf}.bias"))

    def norm(layer, tf1: str, hf: str) -> None:
        entries.append(WeightEntry(layer.gamma, f"{tf1}/gamma", f"{hf}.weight"))
        entries.append(WeightEntry(layer.beta, f"{tf1}/beta", f"{hf}.bias"))

    emb = backbone.embeddings
    for table in ("word_embeddings", "position_embeddings", "token_type_embeddings"):
        entries.append(
            WeightEntry(
                getattr(emb, table).embeddings,
                f"bert/embeddings/{table}",
                f"albert.embeddings.{table}.weight",
            )
        )
    norm(emb.layer_norm, "bert/embeddings/LayerNorm", "albert.embeddings.LayerNorm")
    encoder = backbone.encoder
    if encoder.projection is not None:
        dense(
            encoder.projection,
            "bert/encoder/embedding_hidden_mapping_in",
            "albert.encoder.embedding_hidden_mapping_in",
        )
    for k, block in enumerate(encoder.attention_blocks):
        group, inner = _block_location(config, k)
        tf1 = f"bert/encoder/transformer/group_{group}/inner_group_{inner}"
        hf = f"albert.encoder.albert_layer_groups.{group}.albert_layers.{inner}"
        for name in ("query", "key", "value"):
            dense(getattr(block, name), f"{tf1}/attention_1/self/{name}", f"{hf}.attention.{name}")
        dense(block.output_dense, f"{tf1}/attention_1/output/dense", f"{hf}.attention.dense")
        norm(block.layer_norm, f"{tf1}/LayerNorm", f"{hf}.attention.LayerNorm")
    for k, block in enumerate(encoder.ffn_blocks):
        group, inner = _block_location(config, k)
        tf1 = f"bert/encoder/transformer/group_{group}/inner_group_{inner}"
        hf = f"albert.encoder.albert_layer_groups.{group}.albert_layers.{inner}"
        dense(block.intermediate, f"{tf1}/ffn_1/intermediate/dense", f"{hf}.ffn")
        dense(block.output_dense, f"{tf1}/ffn_1/intermediate/output/dense", f"{hf}.ffn_output")
        norm(block.layer_norm, f"{tf1}/LayerNorm_1", f"{hf}.full_layer_layer_norm")
    dense(backbone.pooler, "bert/pooler/dense", "albert.pooler")
    mlm = model.mlm_head
    dense(mlm.dense, "cls/predictions/transform/dense", "predictions.dense")
    norm(mlm.layer_norm, "cls/predictions/transform/LayerNorm", "predictions.LayerNorm")
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


# --- Hugging Face ---------------------------------------------------------------------------------

_HF_ACTIVATIONS = {
    "gelu_new": "gelu_new",
    "gelu_pytorch_tanh": "gelu_new",
    "gelu": "gelu",
    "relu": "relu",
}


def config_from_huggingface(values: dict[str, Any], source: str = "config.json") -> AlbertConfig:
    """Our config for a Hugging Face `AlbertConfig` dict (which always has the E->H projection)."""
    act = values.get("hidden_act", "gelu_new")
    if act not in _HF_ACTIVATIONS:
        raise ConversionError(f"{source}: unsupported hidden_act {act!r}")
    if values.get("position_embedding_type", "absolute") != "absolute":
        raise ConversionError(
            f"{source}: unsupported position_embedding_type "
            f"{values['position_embedding_type']!r} (only 'absolute')"
        )
    fields = (
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
        "classifier_dropout_prob",
        "max_position_embeddings",
        "type_vocab_size",
        "initializer_range",
        "layer_norm_eps",
    )
    kwargs = {name: values[name] for name in fields if values.get(name) is not None}
    return AlbertConfig(
        **kwargs,
        hidden_act=_HF_ACTIVATIONS[act],
        sharing="all",
        embedding_projection=projection_flag(kwargs, True),
    )


def config_to_huggingface(config: AlbertConfig) -> dict[str, Any]:
    """The Hugging Face `config.json` dict equivalent to `config`."""
    return {
        "architectures": ["AlbertForPreTraining"],
        "model_type": "albert",
        "vocab_size": config.vocab_size,
        "embedding_size": config.embedding_size,
        "hidden_size": config.hidden_size,
        "num_hidden_layers": config.num_hidden_layers,
        "num_hidden_groups": checkpoint_groups(config),
        "num_attention_heads": config.num_attention_heads,
        "intermediate_size": config.intermediate_size,
        "inner_group_num": config.inner_group_num,
        "hidden_act": config.hidden_act,
        "hidden_dropout_prob": config.hidden_dropout_prob,
        "attention_probs_dropout_prob": config.attention_probs_dropout_prob,
        "classifier_dropout_prob": config.classifier_dropout_prob,
        "max_position_embeddings": config.max_position_embeddings,
        "type_vocab_size": config.type_vocab_size,
        "initializer_range": config.initializer_range,
        "layer_norm_eps": config.layer_norm_eps,
        "pad_token_id": 0,
        "bos_token_id": 2,
        "eos_token_id": 3,
    }


def _read_safetensors(url: str) -> dict[str, np.ndarray]:
    from safetensors.numpy import load

    with open_file(url, "rb") as handle:
        return load(handle.read())


def read_huggingface_tensors(directory: str) -> dict[str, np.ndarray]:
    """All tensors of a Hugging Face checkpoint directory (safetensors, sharded, or torch .bin)."""
    single = join(directory, "model.safetensors")
    index = join(directory, "model.safetensors.index.json")
    torch_bin = join(directory, "pytorch_model.bin")
    if exists(single):
        return _read_safetensors(single)
    if exists(index):
        with open_file(index, "rb") as handle:
            shards = sorted(set(json.load(handle)["weight_map"].values()))
        tensors: dict[str, np.ndarray] = {}
        for shard in shards:
            tensors.update(_read_safetensors(join(directory, shard)))
        return tensors
    if exists(torch_bin):
        import torch

        with open_file(torch_bin, "rb") as handle:
            state = torch.load(io.BytesIO(handle.read()), map_location="cpu", weights_only=True)
        return {name: value.float().numpy() for name, value in state.items()}
    raise ConversionError(f"{directory}: no Hugging Face weights (looked for {HF_WEIGHT_FILES})")


def load_huggingface(directory: str) -> AlbertPretrainingModel:
    """An `AlbertPretrainingModel` from a Hugging Face `AlbertForPreTraining` (or `AlbertModel`)
    directory: `config.json` + `model.safetensors` / sharded safetensors / `pytorch_model.bin`."""
    config_url = join(directory, "config.json")
    with open_file(config_url, "rb") as handle:
        config = config_from_huggingface(json.load(handle), config_url)
    tensors = {
        name: value
        for name, value in read_huggingface_tensors(directory).items()
        if not name.endswith(HF_IGNORED_SUFFIXES)
    }
    if not any(name.startswith("albert.") for name in tensors):  # a bare AlbertModel
        tensors = {f"albert.{name}": value for name, value in tensors.items()}
    model = AlbertPretrainingModel(config)
    assign_weights(
        model, tensors, "hf", directory, optional_prefixes=("predictions.", "sop_classifier.")
    )
    return model


def export_huggingface(model: AlbertPretrainingModel, directory: str) -> str:
    """Write `model` as a Hugging Face `AlbertForPreTraining` directory (config.json +
    model.safetensors) that `transformers.AlbertForPreTraining.from_pretrained` loads.

    A model without the E->H projection (E == H) gets an identity projection, which is exact.
    """
    from safetensors.numpy import save

    config = model.config
    hf_config = config_to_huggingface(config)
    tensors = {}
    for entry in weight_entries(model):
        value = keras.ops.convert_to_numpy(entry.variable.value).astype(np.float32)
        tensors[entry.hf] = np.ascontiguousarray(value.T if entry.hf_transpose else value)
    if model.backbone.encoder.projection is None:
        tensors["albert.encoder.embedding_hidden_mapping_in.weight"] = np.eye(
            config.hidden_size, dtype=np.float32
        )
        tensors["albert.encoder.embedding_hidden_mapping_in.bias"] = np.zeros(
            config.hidden_size, np.float32
        )
    with atomic_output_dir(directory) as temp:
        with open_file(join(temp, "config.json"), "w") as handle:
            json.dump(hf_config, handle, indent=2, sort_keys=True)
        with open_file(join(temp, "model.safetensors"), "wb") as handle:
            handle.write(save(tensors, metadata={"format": "pt"}))
    return directory


# --- keras-hub --------------------------------------------------------------------------------------


def keras_hub_compatible(config: AlbertConfig) -> None:
    """Raise a `ConversionError` unless keras-hub's `AlbertBackbone` can represent `config`: whole
    layers shared in groups (sharing 'all' or 'none'), the tanh GELU and LayerNorm epsilon 1e-12,
    which keras-hub fixes."""
    checkpoint_groups(config)
    if config.hidden_act != "gelu_new":
        raise ConversionError(
            f"hidden_act={config.hidden_act!r} has no keras-hub equivalent: "
            "its AlbertBackbone always uses the tanh GELU ('gelu_new')"
        )
    if config.layer_norm_eps != 1e-12:
        raise ConversionError(
            f"layer_norm_eps={config.layer_norm_eps} has no keras-hub equivalent: "
            "its AlbertBackbone always uses 1e-12"
        )


def export_keras_hub(
    model: AlbertPretrainingModel,
    directory: str,
    spm_model: str | None = None,
    do_lower_case: bool = True,
    keep_accents: bool = False,
) -> str:
    """Write `model`'s backbone as a keras-hub preset that `keras_hub.models.AlbertBackbone` and
    `AlbertTextClassifier.from_preset(directory, num_classes=...)` load.

    The weights go through the Hugging Face export and keras-hub's own Hugging Face converter. With
    `spm_model`, the preset's tokenizer and classifier preprocessor hold the vocabulary with ALBERT's
    preprocessing compiled into its SentencePiece normalizer (`albert.tokenizer_export`), so
    keras-hub's `AlbertTokenizer`, which runs SentencePiece on raw text, lowercases and strips
    accents as our tokenizer does.
    """
    keras_hub_compatible(model.config)
    import keras_hub  # heavy

    with tempfile.TemporaryDirectory() as local:
        hf_dir, preset_dir = os.path.join(local, "hf"), os.path.join(local, "preset")
        export_huggingface(model, hf_dir)
        keras_hub.models.AlbertBackbone.from_preset(hf_dir, dtype="float32").save_to_preset(
            preset_dir
        )
        if spm_model:
            from albert.tokenization import AlbertTokenizer
            from albert.tokenizer_export import sentencepiece_with_preprocessing

            ours = AlbertTokenizer(
                spm_model, do_lower_case=do_lower_case, keep_accents=keep_accents
            )
            tokenizer = keras_hub.models.AlbertTokenizer(
                proto=sentencepiece_with_preprocessing(ours)
            )
            keras_hub.models.AlbertTextClassifierPreprocessor(
                tokenizer,
                sequence_length=model.config.max_position_embeddings,
            ).save_to_preset(preset_dir)
        with atomic_output_dir(directory) as temp:
            fs, temp_path = filesystem(temp)
            for root, _, names in os.walk(preset_dir):
                relative = os.path.relpath(root, preset_dir)
                target = temp_path if relative == "." else f"{temp_path}/{relative}"
                fs.makedirs(target, exist_ok=True)
                for name in sorted(names):
                    fs.put(os.path.join(root, name), f"{target}/{name}")
    return directory


# --- google-research TF1 checkpoints ---------------------------------------------------------------


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
    fields = (
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
    kwargs = {name: values[name] for name in fields if values.get(name) is not None}
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
    import tensorflow as tf

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


def _load_keras_file(url: str) -> keras.Model:
    """`keras.saving.load_model` for a local path or any fsspec URL (copied to a temp file)."""
    if "://" not in url:
        return keras.saving.load_model(url)
    with tempfile.TemporaryDirectory() as local:
        local_path = os.path.join(local, "model.keras")
        with open_file(url, "rb") as src, open(local_path, "wb") as dst:
            shutil.copyfileobj(src, dst)
        return keras.saving.load_model(local_path)


# --- dispatch ---------------------------------------------------------------------------------------


def load_pretrained(path: str, config: AlbertConfig | str | None = None) -> AlbertPretrainingModel:
    """Load an `AlbertPretrainingModel` from a `.keras` file, a Hugging Face directory
    (`config.json` + weights), or a TF1 checkpoint prefix (`config` only applies to TF1)."""
    path = str(path)
    if path.endswith(".keras"):
        model = _load_keras_file(path)
        if not isinstance(model, AlbertPretrainingModel):
            raise ConversionError(
                f"{path}: holds a {type(model).__name__}, not an AlbertPretrainingModel"
            )
        return model
    if exists(join(path, "config.json")):
        return load_huggingface(path)
    if exists(path + ".index"):
        return load_tf1_checkpoint(path, config)
    if exists(join(path, "checkpoint")):  # a TF1 model directory
        import tensorflow as tf

        latest = tf.train.latest_checkpoint(path)
        if latest:
            return load_tf1_checkpoint(latest, config)
    raise ConversionError(
        f"{path}: not a .keras file, a Hugging Face directory with config.json, "
        "or a TF1 checkpoint prefix (no .index file)"
    )
