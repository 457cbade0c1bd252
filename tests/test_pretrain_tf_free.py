"""On JAX, model.pretrain (with its held-out baseline) and model.finetune train without TensorFlow
(Grain input), and the pretraining Grain input trains to the same weights as the tf.data input from
the same data and seed."""

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

PRETRAIN_WITHOUT_TENSORFLOW = (
    NO_TENSORFLOW
    + """
import json
from model.pretrain import PretrainConfig, run

from model.baselines import unigram_baseline

config = PretrainConfig(**json.loads(sys.argv[1]))
result = run(config)
baseline = unigram_baseline(config.data, batch_size=config.batch_size)
print(json.dumps({
    "weights": result["weights_sha256"],
    "heldout": result["heldout"],
    "steps": result["steps"],
    "baseline": baseline["masked_lm_accuracy"],
    "tensorflow": sorted(name for name in sys.modules if name.startswith("tensorflow")),
}))
"""
)


@pytest.mark.slow
@pytest.mark.keras
def test_jax_pretraining_runs_without_tensorflow_and_matches_tf_data(keras_backend, tmp_path):
    if keras_backend != "jax":
        pytest.skip("compares with a tf.data run on the JAX backend: runs in `make test-jax`")
    from model.pretrain import PretrainConfig, run

    data = write_shards(tmp_path / "records", num_shards=3, per_shard=24, dynamic=True)
    config = {**TRAIN, "data": str(data), "output": str(tmp_path / "grain")}
    # the tf.data run here first: the run without TensorFlow reads its compilations from the cache
    env = subprocess_env(KERAS_BACKEND="jax", JAX_PLATFORMS="cpu")
    tf_data = run(
        PretrainConfig(**{**config, "output": str(tmp_path / "tf_data"), "input": "tf.data"})
    )
    without_tf = subprocess.run(
        [sys.executable, "-c", PRETRAIN_WITHOUT_TENSORFLOW, json.dumps(config)],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert without_tf.returncode == 0, without_tf.stderr[-3000:]
    grain = json.loads(without_tf.stdout.strip().splitlines()[-1])
    assert (
        grain["steps"] == SETTINGS["steps"]
        and grain["tensorflow"] == []
        and 0.0 <= grain["baseline"] <= 1.0
    )
    assert list((tmp_path / "grain" / "checkpoints").glob("ckpt-*"))
    assert list((tmp_path / "grain" / "tensorboard").glob("events.out.tfevents.*"))
    assert tf_data["weights_sha256"] == grain["weights"]
    assert tf_data["heldout"] == pytest.approx(grain["heldout"], rel=1e-6)


FINETUNE_WITHOUT_TENSORFLOW = (
    NO_TENSORFLOW
    + """
import json
from model.finetune import FinetuneConfig, run

config = FinetuneConfig(**json.loads(sys.argv[1]))
summary = run(config)
results = json.load(open(config.output + "/results.json"))
print(json.dumps({
    "dev": summary["dev"],
    "multitask": results["multitask"]["tasks"],
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


@pytest.mark.slow
@pytest.mark.keras
def test_jax_finetuning_and_multitask_run_without_tensorflow(keras_backend, tmp_path):
    if keras_backend != "jax":
        pytest.skip("the JAX backend's TF-free fine-tuning input: runs in `make test-jax`")
    from tests.fixtures.tasks.tiny_vocab import train_tiny_spm

    config = {
        "task": "sst2",
        "spm_model": train_tiny_spm(tmp_path),
        "output": str(tmp_path / "sst2"),
        "data_dir": write_glue(tmp_path / "SST-2", 24, regression=False),
        "init": "random",
        "preset": "albert-nano",
        "max_seq_length": 32,
        "train_steps": 4,
        "eval_every": 2,
        "batch_size": 8,
        "multitask": [f"stsb={write_glue(tmp_path / 'STS-B', 16, regression=True)}"],
        "multitask_steps": 3,
    }
    env = subprocess_env(
        KERAS_BACKEND="jax",
        JAX_PLATFORMS="cpu",
        PYTHONPATH=f"{ROOT}:{ROOT / 'tests'}",
    )
    done = subprocess.run(
        [sys.executable, "-c", FINETUNE_WITHOUT_TENSORFLOW, json.dumps(config)],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["tensorflow"] == [] and result["multitask"] == ["sst2", "stsb"]
    assert 0.0 <= result["dev"]["accuracy"] <= 1.0
