"""model.checkpointing: atomic checkpoints, the last K kept, weights and optimizer slots restored."""

import numpy as np
import pytest

keras = pytest.importorskip("keras")

from albert.stage import StageError
from model import checkpointing
from model.optimizers import Lamb


def _model_and_optimizer(seed=0):
    keras.utils.set_random_seed(seed)
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2), keras.layers.LayerNormalization()])
    optimizer = Lamb(0.01)
    optimizer.build(model.trainable_variables)
    optimizer.apply([keras.ops.ones(v.shape) for v in model.trainable_variables])
    return model, optimizer


@pytest.mark.keras
def test_save_keeps_the_last_k_and_restores_weights_slots_and_state(tmp_path):
    model, optimizer = _model_and_optimizer(0)
    directory = str(tmp_path / "checkpoints")
    for step in (1, 2, 3):
        checkpointing.save_checkpoint(directory, step, model, optimizer, {"epoch": 0, "batch_in_epoch": step}, keep=2)
    (tmp_path / "checkpoints" / "ckpt-000000009.tmp-deadbeef").mkdir()  # an interrupted write is ignored
    assert [c.step for c in checkpointing.list_checkpoints(directory)] == [2, 3]

    other, other_optimizer = _model_and_optimizer(1)
    state = checkpointing.load_checkpoint(checkpointing.latest_checkpoint(directory).path, other, other_optimizer)
    assert state == {"epoch": 0, "batch_in_epoch": 3, "step": 3}
    for a, b in zip(model.variables + optimizer.variables, other.variables + other_optimizer.variables):
        np.testing.assert_array_equal(np.asarray(a.numpy()), np.asarray(b.numpy()))


@pytest.mark.keras
def test_mismatched_shapes_name_the_variable(tmp_path):
    model, optimizer = _model_and_optimizer(0)
    path = checkpointing.save_checkpoint(str(tmp_path), 1, model, optimizer, {}, keep=1)
    wider = keras.Sequential([keras.Input((3,)), keras.layers.Dense(4), keras.layers.LayerNormalization()])
    with pytest.raises(StageError, match="kernel has shape"):
        checkpointing.load_checkpoint(path, wider)


def test_no_directory_means_no_checkpoint(tmp_path):
    assert checkpointing.latest_checkpoint(str(tmp_path / "absent")) is None
