"""In a JAX process, what Keras asks of TensorFlow loads it nowhere we seed or save
(`model.runtime.keras_tensorflow`): `keras_seeds.set_random_seed` gives the seeds Keras's own gives
(Python's, NumPy's, Keras's global seed), a model's `.keras` file is written and reads back the
same, and TensorFlow stays unloaded; once something has loaded it, Keras asks it as usual."""

import subprocess
import sys
from pathlib import Path

import pytest

keras = pytest.importorskip("keras")

pytestmark = pytest.mark.keras

SEEDS_AND_SAVE_WITHOUT_TENSORFLOW = """
import random, sys, tempfile
import numpy as np
import keras
from keras.src.backend.common import global_state
from keras.src.utils import module_utils
from model.runtime import keras_seeds, keras_tensorflow

def seeds():
    keras_seed = global_state.get_global_attribute("global_random_seed")
    return random.random(), np.random.random(), keras_seed

keras_seeds.set_random_seed(5, tensorflow=False)
ours = seeds()
model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2), keras.layers.Dropout(0.1)])
path = tempfile.mkdtemp() + "/model.keras"
with keras_tensorflow.absent_unless_loaded():
    model.save(path)
same = all(
    np.array_equal(a, b)
    for a, b in zip(model.get_weights(), keras.saving.load_model(path).get_weights())
)
unloaded = "tensorflow" not in sys.modules
keras.utils.set_random_seed(5)  # Keras's own: loads TensorFlow to seed it
with keras_tensorflow.absent_unless_loaded():
    asked = module_utils.tensorflow.available
print(unloaded, ours == seeds(), same, "tensorflow" in sys.modules, asked)
"""


def test_a_jax_run_seeds_and_saves_as_keras_does_without_loading_tensorflow():
    if keras.config.backend() != "jax":
        pytest.skip("the JAX backend's seeding and saving: runs in `make test-jax`")
    root = Path(__file__).resolve().parents[1]
    done = subprocess.run(
        [sys.executable, "-c", SEEDS_AND_SAVE_WITHOUT_TENSORFLOW],
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(root), "KERAS_BACKEND": "jax"},
        capture_output=True,
        text=True,
        check=True,
    )
    assert done.stdout.split() == ["True"] * 5, done.stderr[-2000:]
