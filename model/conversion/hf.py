"""Hugging Face interop: `AlbertForPreTraining` (or `AlbertModel`) directories, `config.json` plus
safetensors (single or sharded) or `pytorch_model.bin`, to and from `AlbertPretrainingModel`
(names and strict copying: `model.checkpoints.weights`)."""

from __future__ import annotations

import io
import json
from typing import Any

import keras
import numpy as np
import safetensors.numpy

from albert.fs import exists, join, open_file
from albert.outputs import atomic_output_dir
from model.checkpoints.weights import (
    ConversionError,
    WeightEntry,
    assign_weights,
    backbone_entries,
    checkpoint_groups,
    config_fields,
    projection_flag,
    weight_entries,
)
from model.network.config import AlbertConfig
from model.network.pretraining_model import AlbertPretrainingModel

HF_WEIGHT_FILES = ("model.safetensors", "model.safetensors.index.json", "pytorch_model.bin")
# Hugging Face: the decoder is tied to the word embeddings / output bias; buffers are not weights.
HF_IGNORED_SUFFIXES = (
    "predictions.decoder.weight",
    "predictions.decoder.bias",
    ".position_ids",
    ".token_type_ids",
)

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
    kwargs = config_fields(values, ("classifier_dropout_prob", "layer_norm_eps"))
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
    with open_file(url, "rb") as handle:
        return safetensors.numpy.load(handle.read())


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
        import torch  # optional (the test extra): only pytorch_model.bin files need it

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


def export_huggingface(
    model: AlbertPretrainingModel, directory: str, masked_lm: bool = True
) -> str:
    """Write `model` as a Hugging Face `AlbertForPreTraining` directory (config.json +
    model.safetensors) that `transformers.AlbertForPreTraining.from_pretrained` loads; without
    `masked_lm` (an RTD discriminator, whose masked-LM head never trained) as an `AlbertModel`
    with no masked-LM head, so that a fill-mask pipeline says its head is new.

    A model without the E->H projection (E == H) gets an identity projection, which is exact.
    """
    hf_config, entries = config_to_huggingface(model.config), weight_entries(model)
    if not masked_lm:
        hf_config["architectures"] = ["AlbertModel"]
        entries = [entry for entry in entries if not entry.hf.startswith("predictions.")]
    return write_huggingface(directory, hf_config, entries, model.backbone)


# A fine-tuned model's Hugging Face class -> the name of its head's dense layer there.
HF_HEADS = {
    "AlbertForSequenceClassification": "classifier",
    "AlbertForMultipleChoice": "classifier",
    "AlbertForQuestionAnswering": "qa_outputs",
}


def export_huggingface_task(
    model,
    architecture: str,
    directory: str,
    labels: tuple[str, ...] | None = None,
    problem_type: str | None = None,
) -> str:
    """Write a fine-tuned `model.finetune.models.FinetuneModel` as a Hugging Face directory of
    `architecture` (`HF_HEADS`). A sequence classifier gets `problem_type`
    ('single_label_classification', 'multi_label_classification' or 'regression') and the label
    names as `id2label`/`label2id` (None: one score). A head on another input than the pooled
    output (question answering's reads the tokens) is a ConversionError: Hugging Face's
    classifiers read the pooled output."""
    if architecture != "AlbertForQuestionAnswering" and model.features != "pooled":
        raise ConversionError(
            f"features={model.features!r}: Hugging Face's {architecture} reads the pooled output "
            "only"
        )
    hf_config = {
        **config_to_huggingface(model.backbone.config),
        "architectures": [architecture],
        "classifier_dropout_prob": model.dropout,
    }
    if architecture == "AlbertForSequenceClassification":
        names = labels or tuple(f"LABEL_{i}" for i in range(model.num_labels))
        hf_config["problem_type"] = problem_type
        hf_config["id2label"] = {str(i): name for i, name in enumerate(names)}
        hf_config["label2id"] = {name: i for i, name in enumerate(names)}
    head = HF_HEADS[architecture]
    entries = backbone_entries(model.backbone)
    entries += [
        WeightEntry(model.head.dense.kernel, "", f"{head}.weight", hf_transpose=True),
        WeightEntry(model.head.dense.bias, "", f"{head}.bias"),
    ]
    return write_huggingface(directory, hf_config, entries, model.backbone)


def write_huggingface(directory: str, hf_config: dict, entries: list, backbone) -> str:
    """`config.json` and `model.safetensors` of `entries` (`WeightEntry`, by their Hugging Face
    names), written whole. A backbone without the E->H projection (E == H) gets an identity
    projection, which is exact."""
    tensors = {}
    for entry in entries:
        value = keras.ops.convert_to_numpy(entry.variable.value).astype(np.float32)
        tensors[entry.hf] = np.ascontiguousarray(value.T if entry.hf_transpose else value)
    if backbone.encoder.projection is None:
        size = backbone.config.hidden_size
        tensors["albert.encoder.embedding_hidden_mapping_in.weight"] = np.eye(size).astype("f4")
        tensors["albert.encoder.embedding_hidden_mapping_in.bias"] = np.zeros(size, np.float32)
    with atomic_output_dir(directory) as temp:
        with open_file(join(temp, "config.json"), "w") as handle:
            json.dump(hf_config, handle, indent=2, sort_keys=True)
        with open_file(join(temp, "model.safetensors"), "wb") as handle:
            handle.write(safetensors.numpy.save(tensors, metadata={"format": "pt"}))
    return directory
