"""keras-hub exports: `AlbertPretrainingModel`'s backbone as a keras-hub preset, a fine-tuned
classifier as an `AlbertTextClassifier` preset (both through the Hugging Face export and
keras-hub's own Hugging Face converter), with the vocabulary."""

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
            preprocessor(ours, model.config.max_position_embeddings).save_to_preset(preset_dir)
        put_preset(preset_dir, directory)
    return directory


def preprocessor(tokenizer: AlbertTokenizer, sequence_length: int):
    """keras-hub's `AlbertTextClassifierPreprocessor` of our `tokenizer`, ALBERT's preprocessing
    compiled into its SentencePiece normalizer (`albert.tokenizer_export`)."""
    import keras_hub  # heavy: only the keras-hub export needs it

    proto = sentencepiece_with_preprocessing(tokenizer)
    return keras_hub.models.AlbertTextClassifierPreprocessor(
        keras_hub.models.AlbertTokenizer(proto=proto), sequence_length=sequence_length
    )


def put_preset(preset_dir: str, directory: str) -> None:
    """Copy the local preset `preset_dir` to `directory` (local or gs://), written whole."""
    with atomic_output_dir(directory) as temp:
        fs, temp_path = filesystem(temp)
        for root, _, names in os.walk(preset_dir):
            relative = os.path.relpath(root, preset_dir)
            target = temp_path if relative == "." else f"{temp_path}/{relative}"
            fs.makedirs(target, exist_ok=True)
            for name in sorted(names):
                fs.put(os.path.join(root, name), f"{target}/{name}")


def export_keras_hub_classifier(
    model, hf_dir: str, directory: str, tokenizer: AlbertTokenizer, sequence_length: int
) -> str:
    """Write a fine-tuned classifier (`FinetuneModel` on the pooled output, already exported as
    Hugging Face's `AlbertForSequenceClassification` in `hf_dir`) as a keras-hub
    `AlbertTextClassifier` preset: `keras_hub.models.TextClassifier.from_preset(directory)` loads
    it, and its `predict` on raw strings (or pairs) gives the model's logits."""
    keras_hub_compatible(model.backbone.config)
    import keras_hub  # heavy: only the keras-hub export needs it

    backbone = keras_hub.models.AlbertBackbone.from_preset(hf_dir, dtype="float32")
    classifier = keras_hub.models.AlbertTextClassifier(
        backbone,
        model.num_labels,
        preprocessor=preprocessor(tokenizer, sequence_length),
        dropout=model.dropout,
    )
    classifier.output_dense.set_weights(model.head.dense.get_weights())
    with tempfile.TemporaryDirectory() as local:
        classifier.save_to_preset(local)
        put_preset(local, directory)
    return directory
