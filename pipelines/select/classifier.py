"""The domain classifier of Ma et al. (2019) data selection, and its Beam RunInference handler.

`build_classifier` is a small Keras model over SentencePiece ids (embedding -> masked mean ->
softmax over {source, target}); any Keras model taking `{input_ids, segment_ids, input_mask}` and
returning `[B, 2]` logits works with the handler, e.g. a `model.finetune` ALBERT classifier.
`DomainModelHandler` is the `apache_beam.ml.inference` ModelHandler that loads a Keras 3 `.keras`
file (the TensorFlow handler in Beam expects SavedModels) and scores texts with P(target domain).
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterable, Sequence
from typing import Any

import keras
import numpy as np
from apache_beam.ml.inference.base import ModelHandler, PredictionResult
from keras import ops

from albert.fs import open_file
from albert.tokenization import AlbertTokenizer

TARGET = 1  # class index of the target domain


@keras.saving.register_keras_serializable(package="albert")
class MaskedMean(keras.layers.Layer):
    """`(vectors [B, T, D], mask [B, T]) -> [B, D]`: the mean over unmasked positions."""

    def call(self, vectors, mask):
        mask = ops.cast(mask, vectors.dtype)[:, :, None]
        return ops.sum(vectors * mask, axis=1) / ops.maximum(ops.sum(mask, axis=1), 1.0)


def build_classifier(vocab_size: int, max_seq_length: int, dim: int = 64) -> keras.Model:
    ids = keras.Input((max_seq_length,), dtype="int32", name="input_ids")
    mask = keras.Input((max_seq_length,), dtype="int32", name="input_mask")
    segments = keras.Input((max_seq_length,), dtype="int32", name="segment_ids")
    vectors = keras.layers.Embedding(vocab_size, dim, name="embeddings")(ids)
    pooled = MaskedMean(name="mean")(vectors, mask)
    hidden = keras.layers.Dense(dim, activation="relu", name="hidden")(pooled)
    logits = keras.layers.Dense(2, name="logits")(hidden)
    return keras.Model(
        {"input_ids": ids, "input_mask": mask, "segment_ids": segments},
        logits,
        name="domain_classifier",
    )


def encode_texts(
    tokenizer: AlbertTokenizer, texts: Sequence[str], max_seq_length: int
) -> dict[str, np.ndarray]:
    """`[CLS] text [SEP]` ids, head-truncated and padded, as int32 model inputs."""
    ids = np.full((len(texts), max_seq_length), tokenizer.pad_id, dtype=np.int32)
    for row, text in enumerate(texts):
        pieces = [tokenizer.cls_id, *tokenizer.encode(text)[: max_seq_length - 2], tokenizer.sep_id]
        ids[row, : len(pieces)] = pieces
    mask = (ids != tokenizer.pad_id).astype(np.int32)
    return {"input_ids": ids, "input_mask": mask, "segment_ids": np.zeros_like(ids)}


def target_probabilities(model: keras.Model, inputs: dict[str, np.ndarray]) -> np.ndarray:
    logits = keras.ops.convert_to_numpy(model(inputs, training=False)).astype(np.float64)
    logits -= logits.max(axis=-1, keepdims=True)
    probabilities = np.exp(logits)
    return probabilities[:, TARGET] / probabilities.sum(axis=-1)


def train_classifier(
    tokenizer: AlbertTokenizer,
    target: Sequence[str],
    source: Sequence[str],
    path: str,
    max_seq_length: int = 128,
    epochs: int = 5,
    batch_size: int = 32,
    seed: int = 12345,
    holdout: float = 0.2,
) -> dict[str, Any]:
    """Fit the classifier on labelled samples (target = 1, source = 0), save it to `path` (.keras)
    and return its accuracy on a held-out share of the samples."""
    keras.utils.set_random_seed(seed)
    texts = list(target) + list(source)
    labels = np.array([TARGET] * len(target) + [1 - TARGET] * len(source), dtype=np.int32)
    order = np.random.default_rng(seed).permutation(len(texts))
    cut = int(len(texts) * (1 - holdout)) if len(texts) >= 10 else len(texts)
    train, held = order[:cut], order[cut:]
    inputs = encode_texts(tokenizer, texts, max_seq_length)
    model = build_classifier(tokenizer.vocab_size, max_seq_length)
    model.compile(
        optimizer=keras.optimizers.AdamW(1e-2),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        metrics=["accuracy"],
    )
    take = lambda rows: {k: v[rows] for k, v in inputs.items()}
    model.fit(
        take(train), labels[train], epochs=epochs, batch_size=batch_size, verbose=0, shuffle=True
    )
    summary = {
        "target_samples": len(target),
        "source_samples": len(source),
        "train": len(train),
        "heldout": len(held),
    }
    if len(held):
        predicted = target_probabilities(model, take(held)) >= 0.5
        summary["heldout_accuracy"] = float(np.mean(predicted == (labels[held] == TARGET)))
    save_model(model, path)
    return summary


def save_model(model: keras.Model, path: str) -> None:
    """Save a .keras file to a local path or URL."""
    with tempfile.TemporaryDirectory() as temp:
        local = os.path.join(temp, "model.keras")
        model.save(local)
        with open(local, "rb") as source, open_file(path, "wb") as target:
            target.write(source.read())


def load_model(path: str) -> keras.Model:
    """Load a .keras file from a local path or URL."""
    with tempfile.TemporaryDirectory() as temp:
        local = os.path.join(temp, "model.keras")
        with open_file(path, "rb") as source, open(local, "wb") as target:
            target.write(source.read())
        return keras.saving.load_model(local, compile=False)


class LoadedClassifier:
    """The model and tokenizer a RunInference worker holds (Beam shares it by weak reference)."""

    def __init__(self, model: keras.Model, tokenizer: AlbertTokenizer):
        self.model, self.tokenizer = model, tokenizer


class DomainModelHandler(ModelHandler[str, PredictionResult, LoadedClassifier]):
    """RunInference handler: texts -> PredictionResult(text, P(target domain)) with a Keras 3
    model."""

    def __init__(
        self, model_path: str, spm_model: str, max_seq_length: int = 128, max_batch_size: int = 64
    ):
        super().__init__()
        self.model_path, self.spm_model = model_path, spm_model
        self.max_seq_length, self.max_batch_size = max_seq_length, max_batch_size

    def load_model(self):
        return LoadedClassifier(load_model(self.model_path), AlbertTokenizer(self.spm_model))

    def run_inference(
        self, batch: Sequence[str], model, inference_args=None
    ) -> Iterable[PredictionResult]:
        inputs = encode_texts(model.tokenizer, batch, self.max_seq_length)
        probabilities = target_probabilities(model.model, inputs)
        return [PredictionResult(text, float(p)) for text, p in zip(batch, probabilities)]

    def batch_elements_kwargs(self):
        return {"min_batch_size": 1, "max_batch_size": self.max_batch_size}
