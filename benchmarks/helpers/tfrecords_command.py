"""The tfrecords stage's command line as the benchmarks run it: one static dupe pass at 512 tokens
into 16 shards, so their figures compare."""

from __future__ import annotations

import sys
from pathlib import Path


def tfrecords_command(corpus: Path, spm_model: Path, output: Path, *extra: str) -> list[str]:
    """`python -m pipelines.tfrecords` on `corpus` with `spm_model` into `output`; `extra` flags
    (Beam's worker options) follow."""
    return [
        *(sys.executable, "-m", "pipelines.tfrecords", "--input", str(corpus)),
        *("--spm-model", str(spm_model), "--output", str(output)),
        *("--dupe-factor", "1", "--max-seq-length", "512", "--num-shards", "16"),
        *extra,
    ]
