"""keras-hub export: `AlbertPretrainingModel`'s backbone as a keras-hub preset (through the Hugging
Face export and keras-hub's own Hugging Face converter), with the vocabulary when given."""

from __future__ import annotations

import os
import tempfile

from albert.fs import filesystem
from albert.outputs import atomic_output_dir
from albert.tokenization import AlbertTokenizer
from albert.tokenizer_export import sentencepiece_with_preprocessing
from model.checkpoints.weights import ConversionError, checkpoint_groups
from model.conversion.hf import export_huggingface
from model.network.config import AlbertConfig
from model.network.pretraining_model import AlbertPretrainingModel


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
) -> str:
    """Write `model`'s backbone as a keras-hub preset that `keras_hub.models.AlbertBackbone` and
    `AlbertTextClassifier.from_preset(directory, num_classes=...)` load.

    The weights go through the Hugging Face export and keras-hub's own Hugging Face converter.
    With `spm_model`, the preset's tokenizer and classifier preprocessor hold the vocabulary with
    the preprocessing its record states compiled into its SentencePiece normalizer
    (`albert.tokenizer_export`), so keras-hub's `AlbertTokenizer`, which runs SentencePiece on raw
    text, lowercases and strips accents where our tokenizer does, and only there."""
    keras_hub_compatible(model.config)
    import keras_hub  # heavy: only the keras-hub export needs it

    with tempfile.TemporaryDirectory() as local:
        hf_dir, preset_dir = os.path.join(local, "hf"), os.path.join(local, "preset")
        export_huggingface(model, hf_dir)
        keras_hub.models.AlbertBackbone.from_preset(hf_dir, dtype="float32").save_to_preset(
            preset_dir
        )
        if spm_model:
            ours = AlbertTokenizer(spm_model)
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
