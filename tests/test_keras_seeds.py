"""A model built inside `keras_seeds.drawn_from` does not depend on other threads' use of Python's
global `random` (a flow's websocket pings drew from it and gave two hosts different models), and is
the model `keras.utils.set_random_seed` gives on a quiet process. That `keras_seeds.set_random_seed`
seeds as Keras does without loading TensorFlow: tests/test_keras_tensorflow.py."""

import random
import sys
import threading

import numpy as np
import pytest

keras = pytest.importorskip("keras")

from thread_random import random_for_this_thread_alone

from model.network.config import get_preset
from model.network.pretraining_model import AlbertPretrainingModel
from model.runtime.keras_seeds import drawn_from

pytestmark = pytest.mark.keras

CONFIG = {"vocab_size": 64, "hidden_dropout_prob": 0.1, "attention_probs_dropout_prob": 0.1}


def _values(model) -> list[np.ndarray]:
    """Every variable of the model: the weights and the dropout seed-generator states."""
    return [np.asarray(variable) for variable in model.variables]


def _build(seeds_of_our_own: bool) -> list[np.ndarray]:
    keras.utils.set_random_seed(7)
    if not seeds_of_our_own:
        return _values(AlbertPretrainingModel(get_preset("albert-nano", **CONFIG)))
    with drawn_from(7):
        return _values(AlbertPretrainingModel(get_preset("albert-nano", **CONFIG)))


def _quiet() -> list[np.ndarray]:
    """Keras's own seeding (`_build(seeds_of_our_own=False)`) as on a quiet process: no other
    thread of this worker draws from the shared generator meanwhile."""
    with random_for_this_thread_alone():
        return _build(seeds_of_our_own=False)


def _beside_a_thread_drawing(build) -> list[np.ndarray]:
    """`build()` while another thread draws from the global `random` as fast as it can."""
    stop = threading.Event()

    def draw():
        while not stop.is_set():
            random.getrandbits(32)

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # the threads take turns often, as on a loaded host
    thread = threading.Thread(target=draw, daemon=True)
    thread.start()
    try:
        return build()
    finally:
        stop.set()
        thread.join()
        sys.setswitchinterval(interval)


def _same(a: list[np.ndarray], b: list[np.ndarray]) -> bool:
    return len(a) == len(b) and all(np.array_equal(x, y) for x, y in zip(a, b))


def test_a_drawing_thread_changes_keras_own_seeds():
    """The defect: Keras's default seeds come from the shared generator."""
    quiet = _quiet()
    assert not _same(quiet, _beside_a_thread_drawing(lambda: _build(seeds_of_our_own=False)))


def test_seeds_of_our_own_give_the_quiet_model_whatever_other_threads_draw():
    quiet = _quiet()
    assert _same(quiet, _beside_a_thread_drawing(_quiet))
    assert _same(quiet, _build(seeds_of_our_own=True))
    assert _same(quiet, _beside_a_thread_drawing(lambda: _build(seeds_of_our_own=True)))
