"""The RunInference model handler of `albert predict`: blocks of rows -> their predictions.

The model is whatever `load()` returns (an object with `predict(texts) -> predictions`, one per
row: `model.predict.predictor.Predictor`, which the command passes in, so that this layer loads
no model code of its own). RunInference loads it once per worker process and shares it among the
process's threads (Beam's `shared.Shared`), or, with `share_across_processes`, once per machine
(`multi_process_shared`). `BatchElements` groups blocks by `batch_elements_kwargs`; each block is
predicted on its own, so a row's prediction never depends on which blocks travel with it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

from apache_beam.ml.inference.base import ModelHandler

from pipelines.predict.rows import Row


class BlockModelHandler(ModelHandler[list[Row], list[tuple[Row, dict]], Any]):
    """Blocks of `Row`s -> for each block, its (row, prediction) pairs in the block's order."""

    def __init__(
        self,
        load: Callable[[], Any],
        max_blocks: int = 4,
        share_across_processes: bool = False,
    ):
        super().__init__()
        self.load, self.max_blocks = load, max_blocks
        self.share_across_processes = share_across_processes

    def load_model(self):
        return self.load()

    def run_inference(
        self, batch: Sequence[list[Row]], model, inference_args=None
    ) -> Iterable[list[tuple[Row, dict]]]:
        return [list(zip(block, model.predict([row.texts for row in block]))) for block in batch]

    def batch_elements_kwargs(self):
        return {"min_batch_size": 1, "max_batch_size": self.max_blocks}

    def share_model_across_processes(self) -> bool:
        return self.share_across_processes

    def get_num_bytes(self, batch: Sequence[list[Row]]) -> int:
        return sum(
            len(text)
            for block in batch
            for row in block
            for texts in row.texts.values()
            for text in texts
        )
