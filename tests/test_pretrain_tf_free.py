"""On JAX, model.pretrain (with its held-out baseline) and model.finetune train without TensorFlow
(Grain input), and the pretraining Grain input trains to the same weights as the tf.data input from
the same data and seed.

One process without TensorFlow runs both (a fine-tuning after the pretraining), as the GPU kit's
commands would one after the other; the tf.data run is in this process."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from pretrain_runs import NO_TENSORFLOW, SETTINGS, subprocess_env
from pretrain_testdata import write_shards

ROOT = Path(__file__).resolve().parents[1]

TRAIN = {**SETTINGS, "shuffle_buffer": 16}

# model.pretrain's `run` on the config of argv[1], then model.finetune's on that of argv[2], where
# TensorFlow cannot be imported; one JSON line of what each gave
WITHOUT_TENSORFLOW = (
    NO_TENSORFLOW
    + """
import json
from model.evaluation.baselines import unigram_baseline
from model.finetune import FinetuneConfig
from model.finetune import run as finetune
from model.pretrain import PretrainConfig
from model.pretrain import run as pretrain

config = PretrainConfig(**json.loads(sys.argv[1]))
result = pretrain(config)
pretrained = {
    "weights": result["weights_sha256"],
    "heldout": result["heldout"],
    "steps": result["steps"],
    "baseline": unigram_baseline(config.data, batch_size=config.batch_size)["masked_lm_accuracy"],
}
config = FinetuneConfig(**json.loads(sys.argv[2]))
summary = finetune(config)
finetuned = {
    "dev": summary["dev"],
    "multitask": json.load(open(config.output + "/results.json"))["multitask"]["tasks"],
}
print(json.dumps({
    "pretrain": pretrained,
    "finetune": finetuned,
    "tensorflow": sorted(name for name in sys.modules if name.startswith("tensorflow")),
}))
"""
)


def write_glue(directory: Path, rows: int, regression: bool) -> str:
    """A small SST-2 (sentence, label) or STS-B (ten columns, score last) directory of the tiny
    vocabulary's sentences."""
    from tests.fixtures.tasks.tiny_vocab import corpus_lines

    directory.mkdir()
    lines = corpus_lines()
    for split, offset in (("train", 0), ("dev", rows)):
        chosen = [lines[(offset + i) % len(lines)] for i in range(rows)]
        if regression:
            header = (
                "index\tgenre\tfilename\tyear\told_index\t"
                "source1\tsource2\tsentence1\tsentence2\tscore"
            )
            body = [
                f"{i}\tg\tf\t2012\t{i}\ts\ts\t{a}\t{lines[-1 - i]}\t{i % 5}.0"
                for i, a in enumerate(chosen)
            ]
        else:
            header = "sentence\tlabel"
            body = [f"{a}\t{i % 2}" for i, a in enumerate(chosen)]
        (directory / f"{split}.tsv").write_text("\n".join([header, *body]) + "\n")
    return str(directory)


@pytest.fixture(scope="module")
def runs(keras_backend, tmp_path_factory) -> dict:
    """The tf.data pretraining summary (this process), and what the process without TensorFlow
    gave: {"tf_data": ..., "without_tf": ..., "grain_output": its pretraining output}."""
    if keras_backend != "jax":
        pytest.skip("the JAX backend's TF-free input, beside tf.data: runs in `make test-jax`")
    from model.pretrain import PretrainConfig, run
    from tests.fixtures.tasks.tiny_vocab import train_tiny_spm

    root = tmp_path_factory.mktemp("tf-free")
    data = write_shards(root / "records", num_shards=3, per_shard=24, dynamic=True)
    pretraining = {**TRAIN, "data": str(data), "output": str(root / "grain")}
    # the tf.data run here first: the run without TensorFlow reads its compilations from the cache
    tf_data = run(
        PretrainConfig(**{**pretraining, "output": str(root / "tf_data"), "input": "tf.data"})
    )
    finetuning = {
        "task": "sst2",
        "spm_model": train_tiny_spm(root),
        "output": str(root / "sst2"),
        "data_dir": write_glue(root / "SST-2", 24, regression=False),
        "init": "random",
        "preset": "albert-nano",
        "max_seq_length": 32,
        "train_steps": 4,
        "eval_every": 2,
        "batch_size": 8,
        "multitask": [f"stsb={write_glue(root / 'STS-B', 16, regression=True)}"],
        "multitask_steps": 3,
    }
    env = subprocess_env(
        KERAS_BACKEND="jax", JAX_PLATFORMS="cpu", PYTHONPATH=f"{ROOT}:{ROOT / 'tests'}"
    )
    done = subprocess.run(
        [sys.executable, "-c", WITHOUT_TENSORFLOW, json.dumps(pretraining), json.dumps(finetuning)],
        env=env,
        cwd=root,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    without_tf = json.loads(done.stdout.strip().splitlines()[-1])
    assert without_tf["tensorflow"] == []
    return {"tf_data": tf_data, "without_tf": without_tf, "grain_output": root / "grain"}


@pytest.mark.slow
@pytest.mark.keras
def test_jax_pretraining_runs_without_tensorflow_and_matches_tf_data(runs):
    grain = runs["without_tf"]["pretrain"]
    assert grain["steps"] == SETTINGS["steps"] and 0.0 <= grain["baseline"] <= 1.0
    assert list((runs["grain_output"] / "checkpoints").glob("ckpt-*"))
    assert list((runs["grain_output"] / "tensorboard").glob("events.out.tfevents.*"))
    assert runs["tf_data"]["weights_sha256"] == grain["weights"]
    assert runs["tf_data"]["heldout"] == pytest.approx(grain["heldout"], rel=1e-6)


@pytest.mark.slow
@pytest.mark.keras
def test_jax_finetuning_and_multitask_run_without_tensorflow(runs):
    finetuned = runs["without_tf"]["finetune"]
    assert finetuned["multitask"] == ["sst2", "stsb"]
    assert 0.0 <= finetuned["dev"]["accuracy"] <= 1.0
