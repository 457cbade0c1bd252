"""Inputs the model-line tests share: small corpora of our own words and one finished run directory
(segment, vocab, tfrecords, pretrain of albert-nano) that a line starts from, built once per test
session (once for all xdist workers of the session) and only read afterwards."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from conftest import session_root
from filelock import FileLock
from test_flows_pipeline import WORDS


def documents(count: int, seed: int) -> list[str]:
    rng = np.random.default_rng(seed)
    return [
        "\n".join(
            " ".join(rng.choice(WORDS, size=rng.integers(6, 14))).capitalize() + "."
            for _ in range(rng.integers(6, 10))
        )
        for _ in range(count)
    ]


def write_docs(path: Path, docs: list[str]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n\n".join(docs) + "\n", encoding="utf-8")
    return path


def built_once(factory: pytest.TempPathFactory, name: str, build: Callable[[Path], None]) -> Path:
    """`name` under the session's temporary root, built by `build(directory)` by the first test
    (of any xdist worker) that asks, under a file lock; the others wait for it and reuse it."""
    root = session_root(factory)
    directory, built = root / name, root / f"{name}.built"
    with FileLock(str(directory) + ".lock"):
        if not built.exists():  # built in place: what it writes may name its own paths
            shutil.rmtree(directory, ignore_errors=True)
            directory.mkdir()
            build(directory)
            built.touch()
    return directory


def build_base(root: Path) -> None:
    """A finished run directory in `root`, built by the stages themselves (no flow)."""
    from model.pretrain import PretrainConfig
    from model.pretrain import run as pretrain
    from pipelines.segment import stage as segment
    from pipelines.tfrecords import stage as tfrecords
    from pipelines.vocab import stage as vocab

    corpus = write_docs(root / "general.txt", documents(60, 0))
    segment.run(
        segment.SegmentConfig(
            input=[str(corpus)],
            output=str(root / "segment"),
            format="text",
            num_shards=2,
            quality=False,
        )
    )
    vocab.run(
        vocab.VocabConfig(input=str(root / "segment"), output=str(root / "vocab"), vocab_size=60)
    )
    spm = str(root / "vocab" / "spiece.model")
    tfrecords.run(
        tfrecords.TFRecordsConfig(
            input=str(root / "segment"),
            spm_model=spm,
            output=str(root / "tfrecords"),
            max_seq_length=64,
            max_predictions_per_seq=10,
            dupe_factor=2,
            num_shards=2,
        )
    )
    pretrain(
        PretrainConfig(
            data=str(root / "tfrecords"),
            output=str(root / "pretrain"),
            preset="albert-nano",
            spm_model=spm,
            steps=2,
            batch_size=8,
            warmup_steps=0,
            jit_compile=False,
            progress=False,
        )
    )


@pytest.fixture(scope="session")
def base(tmp_path_factory) -> Path:
    """The line base (`build_base`), once per session; tests only read it."""
    return built_once(tmp_path_factory, "line-base", build_base)
