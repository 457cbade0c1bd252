"""What the pretraining tests share, built once per test process (each xdist worker): the
TFRecords, and one uninterrupted run of `SETTINGS` that the interrupted-and-resumed runs of several
modules must end as. (Every JAX process of the suite compiles into one cache: tests/conftest.py.)

`SETTINGS` crosses an epoch boundary: 2 training shards of 16 records are 4 batches of 8, so the
6 steps read epoch 0 whole and epoch 1 from its start."""

from __future__ import annotations

import json
import os
from pathlib import Path

TIMING = ("steps_per_second", "sequences_per_second")
SETTINGS = {
    "preset": "albert-nano",
    "batch_size": 8,
    "learning_rate": 5e-3,
    "warmup_steps": 1,
    "steps": 6,
    "log_every": 1,
    "checkpoint_every": 2,
    "eval_every": 4,
    "eval_batches": 1,
    "progress": False,
    "jit_compile": False,
    "export": False,
}
_BUILT: dict[str, object] = {}

# The first lines of a `python -c` program run as where TensorFlow is not installed (the GPU kit):
# no finder finds it, so importing it fails and importlib.util.find_spec says None.
NO_TENSORFLOW = """
import importlib.machinery, sys

class NoTensorFlow(importlib.machinery.PathFinder):
    @classmethod
    def find_spec(cls, name, path=None, target=None):
        if name.partition(".")[0] == "tensorflow":
            return None
        return super().find_spec(name, path, target)

sys.meta_path[:] = [
    NoTensorFlow if finder is importlib.machinery.PathFinder else finder for finder in sys.meta_path
]
"""


def records(tmp_path_factory) -> Path:
    """The shared TFRecords (3 shards of 16 records: the last is held out); never written to."""
    if "records" not in _BUILT:
        from pretrain_testdata import write_shards  # loads TensorFlow

        _BUILT["records"] = write_shards(
            tmp_path_factory.getbasetemp() / "pretrain-records", num_shards=3, per_shard=16
        )
    return _BUILT["records"]


def config(data, output, **values):
    """The PretrainConfig of `SETTINGS` with `values` over them."""
    from model.pretrain import PretrainConfig

    return PretrainConfig(**{**SETTINGS, **values}, data=str(data), output=str(output))


def reference(tmp_path_factory) -> tuple[Path, dict]:
    """The uninterrupted run of `SETTINGS` on `records`: (output directory, summary); never
    written to."""
    if "reference" not in _BUILT:
        from model.pretrain import run

        output = tmp_path_factory.getbasetemp() / "pretrain-reference"
        _BUILT["reference"] = output, run(config(records(tmp_path_factory), output))
    return _BUILT["reference"]


def metrics_records(output: Path) -> list[dict]:
    """metrics.jsonl's records without their timings."""
    lines = (Path(output) / "metrics.jsonl").read_text().splitlines()
    return [{k: v for k, v in json.loads(line).items() if k not in TIMING} for line in lines]


def subprocess_env(**extra: str) -> dict[str, str]:
    """The environment of a `python -m model.pretrain` subprocess: this checkout first on the path,
    TensorFlow's INFO lines off."""
    root = str(Path(__file__).resolve().parents[1])
    return {**os.environ, "PYTHONPATH": root, "TF_CPP_MIN_LOG_LEVEL": "2", **extra}
