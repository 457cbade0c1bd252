"""Task-time knowledge distillation of a fine-tuned ALBERT (`python -m model.distill`,
`albert distill`).

One role per module: `config` (the stage config: fine-tuning's flags, the teacher, the student,
the loss), `checks` (the teacher's checks, before Keras loads), `teacher` (its model and its
outputs on the training set), `cache` (those outputs as NumPy shards, keyed, read a batch at a
time), `batches` (fine-tuning's batches with the teacher's outputs), `losses` (the step's loss,
`keras.distillation`'s losses over the cached teacher), `report` (FLOPs per token, the
side-by-side table), `serving` (parameters, sequences per second), `stage` (`run`) and `cli`
(`main`). Training, scoring, checkpoints and the output are `model.finetune`'s.

Importing the package loads no Keras: `run` imports the stage (Keras) when called.
"""

from model.distill.cli import main, run
from model.distill.config import DistillConfig

__all__ = ["DistillConfig", "main", "run"]
