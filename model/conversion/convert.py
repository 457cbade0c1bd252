"""Load a pretrained model from any checkpoint format: a `.keras` file, a Hugging Face
`AlbertForPreTraining` directory (`model.conversion.hf`) or an original google-research TF1
checkpoint (`model.conversion.tf1`), all as `AlbertPretrainingModel`. Formats are strict: a
checkpoint that does not match the model is a `ConversionError` naming the tensors
(`model.checkpoints.weights`)."""

from __future__ import annotations

import os
import shutil
import tempfile

import keras

from albert.fs import exists, join, open_file
from model.checkpoints.weights import ConversionError
from model.conversion.hf import load_huggingface
from model.conversion.tf1 import load_tf1_checkpoint
from model.network.config import AlbertConfig
from model.network.pretraining_model import AlbertPretrainingModel


def load_keras_file(url: str, compile: bool = True) -> keras.Model:
    """`keras.saving.load_model` for a local path or any fsspec URL (copied to a temp file);
    `compile=False` leaves out the optimizer and loss (a model that only predicts)."""
    if "://" not in url:
        return keras.saving.load_model(url, compile=compile)
    with tempfile.TemporaryDirectory() as local:
        local_path = os.path.join(local, "model.keras")
        with open_file(url, "rb") as src, open(local_path, "wb") as dst:
            shutil.copyfileobj(src, dst)
        return keras.saving.load_model(local_path, compile=compile)


def load_pretrained(path: str, config: AlbertConfig | str | None = None) -> AlbertPretrainingModel:
    """Load an `AlbertPretrainingModel` from a `.keras` file, a Hugging Face directory
    (`config.json` + weights), or a TF1 checkpoint prefix (`config` only applies to TF1)."""
    path = str(path)
    if path.endswith(".keras"):
        model = load_keras_file(path)
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
        import tensorflow as tf  # heavy: only TF1 checkpoints need it (JAX runs never load it)

        latest = tf.train.latest_checkpoint(path)
        if latest:
            return load_tf1_checkpoint(latest, config)
    raise ConversionError(
        f"{path}: not a .keras file, a Hugging Face directory with config.json, "
        "or a TF1 checkpoint prefix (no .index file)"
    )
