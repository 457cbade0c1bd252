"""On JAX, model.pretrain trains without TensorFlow (Grain input), and its Grain input trains to the
same weights as the tf.data input from the same data and seed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from pretrain_testdata import write_shards

ROOT = Path(__file__).resolve().parents[1]

TRAIN = {"preset": "albert-nano", "batch_size": 8, "steps": 3, "warmup_steps": 0, "eval_batches": 2, "log_every": 1,
         "checkpoint_every": 2, "progress": False, "export": False, "shuffle_buffer": 16}

NO_TENSORFLOW = """
import json, sys

class NoTensorFlow:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] == "tensorflow":
            raise ImportError(f"{name}: TensorFlow is not installed here")

sys.meta_path.insert(0, NoTensorFlow())
from model.pretrain import PretrainConfig, run

result = run(PretrainConfig(**json.loads(sys.argv[1])))
print(json.dumps({"weights": result["weights_sha256"], "heldout": result["heldout"], "steps": result["steps"],
                  "tensorflow": sorted(name for name in sys.modules if name.startswith("tensorflow"))}))
"""


@pytest.mark.keras
def test_jax_pretraining_runs_without_tensorflow_and_matches_tf_data(keras_backend, tmp_path):
    if keras_backend != "jax":
        pytest.skip("compares with a tf.data run on the JAX backend: runs in `make test-jax`")
    from model.pretrain import PretrainConfig, run

    data = write_shards(tmp_path / "records", num_shards=3, per_shard=24, dynamic=True)
    config = {**TRAIN, "data": str(data), "output": str(tmp_path / "grain")}
    env = {**os.environ, "KERAS_BACKEND": "jax", "JAX_PLATFORMS": "cpu", "PYTHONPATH": str(ROOT)}
    without_tf = subprocess.Popen([sys.executable, "-c", NO_TENSORFLOW, json.dumps(config)], env=env, cwd=tmp_path,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:  # the tf.data run here meanwhile (both mostly compile, one core each)
        tf_data = run(PretrainConfig(**{**config, "output": str(tmp_path / "tf_data"), "input": "tf.data"}))
        stdout, stderr = without_tf.communicate(timeout=300)
    finally:
        without_tf.kill()
    assert without_tf.returncode == 0, stderr[-3000:]
    grain = json.loads(stdout.strip().splitlines()[-1])
    assert grain["steps"] == 3 and grain["tensorflow"] == []
    assert list((tmp_path / "grain" / "checkpoints").glob("ckpt-*"))
    assert list((tmp_path / "grain" / "tensorboard").glob("events.out.tfevents.*"))
    assert tf_data["weights_sha256"] == grain["weights"]
    assert tf_data["heldout"] == pytest.approx(grain["heldout"], rel=1e-6)
