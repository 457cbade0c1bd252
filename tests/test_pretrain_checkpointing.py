"""model.checkpoints.store: atomic checkpoints, the last K kept, weights and optimizer slots
restored."""

import numpy as np
import pytest

keras = pytest.importorskip("keras")

from albert.errors import StageError
from model.checkpoints import store as checkpointing
from model.optimization.optimizers import Lamb


class _Net(keras.Model):
    """A small model with named layers (checkpoints key variables by path), created in `order`."""

    def __init__(self, width, dense, order):
        super().__init__(name="net")
        for key in order:
            setattr(
                self,
                key,
                keras.layers.Dense(width, name=dense)
                if key == "dense"
                else keras.layers.LayerNormalization(name="norm"),
            )

    def call(self, inputs):
        return self.norm(self.dense(inputs))


def _model(width=2, dense="dense", order=("dense", "norm")):
    model = _Net(width, dense, order)
    model(np.zeros((1, 3), "float32"))
    return model


def _model_and_optimizer(seed=0, **kwargs):
    keras.utils.set_random_seed(seed)
    model = _model(**kwargs)
    optimizer = Lamb(0.01)
    optimizer.build(model.trainable_variables)
    optimizer.apply([keras.ops.ones(v.shape) for v in model.trainable_variables])
    return model, optimizer


@pytest.mark.keras
def test_save_keeps_the_last_k_and_restores_weights_slots_and_state(tmp_path):
    model, optimizer = _model_and_optimizer(0)
    directory = str(tmp_path / "checkpoints")
    for step in (1, 2, 3):
        checkpointing.save_checkpoint(
            directory, step, model, optimizer, {"epoch": 0, "batch_in_epoch": step}, keep=2
        )
    (
        tmp_path / "checkpoints" / "ckpt-000000009.tmp-deadbeef"
    ).mkdir()  # an interrupted write is ignored
    assert [c.step for c in checkpointing.list_checkpoints(directory)] == [2, 3]

    other, other_optimizer = _model_and_optimizer(1)
    state = checkpointing.load_checkpoint(
        checkpointing.latest_checkpoint(directory).path, other, other_optimizer
    )
    assert state == {"epoch": 0, "batch_in_epoch": 3, "step": 3}
    for a, b in zip(
        model.variables + optimizer.variables, other.variables + other_optimizer.variables
    ):
        np.testing.assert_array_equal(np.asarray(a.numpy()), np.asarray(b.numpy()))


@pytest.mark.keras
def test_mismatched_shapes_name_the_variable(tmp_path):
    model, optimizer = _model_and_optimizer(0)
    path = checkpointing.save_checkpoint(str(tmp_path), 1, model, optimizer, {}, keep=1)
    with pytest.raises(
        StageError, match=r"net/dense/kernel has shape \(3, 4\), checkpoint has \(3, 2\)"
    ):
        checkpointing.load_checkpoint(path, _model(width=4))
    with pytest.raises(
        StageError, match=r"the model's net/projection/kernel \(3, 2\) is not in the checkpoint"
    ):
        checkpointing.load_checkpoint(path, _model(dense="projection"))


@pytest.mark.keras
def test_arrays_follow_variable_paths_not_creation_order(tmp_path):
    """Same-shaped variables (like Q, K, V kernels) created in another order still get their own
    arrays."""
    model, optimizer = _model_and_optimizer(0, order=("dense", "norm"))
    path = checkpointing.save_checkpoint(str(tmp_path), 1, model, optimizer, {}, keep=1)
    reordered, reordered_optimizer = _model_and_optimizer(1, order=("norm", "dense"))
    assert [v.path for v in reordered.weights] != [v.path for v in model.weights]
    checkpointing.load_checkpoint(path, reordered, reordered_optimizer)
    saved = {v.path: np.asarray(v.numpy()) for v in model.weights}
    for variable in reordered.weights:
        np.testing.assert_array_equal(np.asarray(variable.numpy()), saved[variable.path])


@pytest.mark.keras
def test_checkpoints_of_the_positional_format_still_load(tmp_path):
    import io

    model, _ = _model_and_optimizer(0)
    path = tmp_path / "ckpt-000000001"
    path.mkdir()
    buffer = io.BytesIO()
    np.savez(
        buffer, **{f"model/{i:05d}": np.asarray(v.numpy()) for i, v in enumerate(model.weights)}
    )
    (path / "weights.npz").write_bytes(buffer.getvalue())
    (path / "state.json").write_text('{"step": 1}')
    other, _ = _model_and_optimizer(1)
    assert checkpointing.load_checkpoint(str(path), other) == {"step": 1}
    for a, b in zip(model.weights, other.weights):
        np.testing.assert_array_equal(np.asarray(a.numpy()), np.asarray(b.numpy()))


def test_no_directory_means_no_checkpoint(tmp_path):
    assert checkpointing.latest_checkpoint(str(tmp_path / "absent")) is None


@pytest.mark.keras
def test_a_damaged_checkpoint_is_passed_over_then_moved_aside_and_none_whole_is_an_error(tmp_path):
    """A truncated `weights.npz` or `state.json` (a kill mid-copy, a full disk outside the atomic
    commit): the newest whole checkpoint is the one to resume from; the damaged ones are moved
    aside, never deleted; with none whole left, one StageError naming the checkpoint."""
    model, optimizer = _model_and_optimizer(0)
    directory = tmp_path / "checkpoints"
    for step in (1, 2, 3):
        checkpointing.save_checkpoint(str(directory), step, model, optimizer, {}, keep=3)
    weights = directory / "ckpt-000000003" / "weights.npz"
    weights.write_bytes(weights.read_bytes()[:-40])
    assert "BadZipFile" in checkpointing.damage(str(weights.parent))
    assert checkpointing.latest_checkpoint(str(directory)).step == 2
    (moved,) = checkpointing.set_aside_damaged(str(directory))
    assert moved.startswith(f"{weights.parent}.previous-")
    assert (tmp_path / moved / "weights.npz").exists()
    for step in (1, 2):
        (directory / f"ckpt-00000000{step}" / "state.json").write_text('{"ste')
    with pytest.raises(StageError, match=r"ckpt-000000002: a damaged checkpoint \(state.json"):
        checkpointing.set_aside_damaged(str(directory))
    assert checkpointing.list_checkpoints(str(directory)) == []
    assert len(list(directory.glob("ckpt-*.previous-*"))) == 3
