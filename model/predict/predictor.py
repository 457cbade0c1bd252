"""A fine-tuned model ready to predict (`Predictor`: what each Beam worker process loads once),
given rows' texts a block at a time (`Predictor.predict`).

A block's model rows are sorted by length and cut into batches of `batch_size` rows, each padded
to its longest row rounded up to a multiple of `LENGTH_STEP` pieces (and to `batch_size` rows),
so that a batch carries little padding and the compiled predict step (Keras's `predict_on_batch`:
a `tf.function` on TensorFlow, `jax.jit` on JAX) sees few shapes. The same block gives the same
batches on any runner: its rows are those of its position in its file.
"""

from __future__ import annotations

import keras
import numpy as np

from albert.tokenization import AlbertTokenizer
from model.network.heads import NEG_INF
from model.predict.kinds import predict_kind
from model.predict.task_info import TaskInfo
from pipelines.predict.config import PredictConfig

LENGTH_STEP = 16


class Predictor:
    """A fine-tuned model, its task and tokenizer: rows' texts -> predictions, as `settings` say
    (`--windows`, `--window-stride`, `--top-k`, `--batch-size`)."""

    def __init__(self, info: TaskInfo, model: keras.Model, settings: PredictConfig):
        self.info, self.model, self.settings = info, model, settings
        self.tokenizer = AlbertTokenizer(info.spm_model)
        self.batch_size = settings.batch_size or info.batch_size
        self.kind = predict_kind(info)

    def predict(self, texts: list[dict[str, list[str]]]) -> list[dict]:
        """One prediction per row (`model.predict.outputs`), in the order of `texts`."""
        if not texts:
            return []
        encoded = self.kind.encode(
            self.info, self.tokenizer, texts, self.settings.windows, self.settings.window_stride
        )
        outputs = self.run(encoded.arrays)
        return self.kind.predictions(self.info, encoded, outputs, texts, self.settings.top_k)

    def run(self, arrays: dict[str, np.ndarray]):
        """The model's outputs for `arrays`' rows, in their order (see the module docstring)."""
        mask = arrays["input_mask"]
        full = mask.shape[-1]
        lengths = mask.reshape(len(mask), -1, full).max(axis=1).sum(axis=-1)
        order = np.argsort(lengths, kind="stable")
        results: list[tuple[np.ndarray, object]] = []
        for first in range(0, len(order), self.batch_size):
            rows = order[first : first + self.batch_size]
            length = min(full, -(-int(lengths[rows].max()) // LENGTH_STEP) * LENGTH_STEP)
            batch = {}
            for name, values in arrays.items():
                cut = values[rows][..., :length]
                padding = [(0, self.batch_size - len(rows))] + [(0, 0)] * (cut.ndim - 1)
                batch[name] = np.pad(cut, padding)
            outputs = self.model.predict_on_batch(batch)
            results.append((rows, _first_rows(outputs, len(rows))))
        return _in_order(results, len(order), full, self.kind.per_token)


def _first_rows(outputs, count: int):
    """The outputs of a batch's first `count` rows (the others pad the batch), as NumPy arrays."""
    return keras.tree.map_structure(lambda output: np.asarray(output)[:count], outputs)


def _in_order(results: list, total: int, full: int, per_token: bool):
    """The batches' outputs ([rows, ...] arrays, or a dict of them) back in the rows' order;
    per-token outputs (SQuAD's logits) padded back to the full length with the head's masked
    value."""

    def gather(*parts):
        width = full if per_token else parts[0].shape[1]
        merged = np.full((total, width), NEG_INF if per_token else 0.0, dtype=np.float32)
        for (rows, _), part in zip(results, parts):
            merged[rows, : part.shape[1]] = part
        return merged

    return keras.tree.map_structure(gather, *(outputs for _, outputs in results))
