"""Training checkpoints: atomic, the last K kept, enough state for an exact resume.

A checkpoint is a directory `ckpt-<step:09d>/` holding `weights.npz` (every model weight, the dropout seed states and every
optimizer variable — slots, iteration count — in their tracking order) and `state.json` (step, data
position, seed and whatever else the trainer records). It is written to a temporary sibling and
renamed into place (`albert.fileio.atomic_output_dir`), so a run killed mid-write leaves either the
previous checkpoints or a complete new one, never a half-written one. Works on local paths and gs://.
"""

from __future__ import annotations

import io
import json
import logging
import re
from dataclasses import dataclass

import numpy as np

from albert import fileio
from albert.stage import StageError

logger = logging.getLogger(__name__)

_NAME = re.compile(r"ckpt-(\d+)$")


@dataclass(frozen=True)
class Checkpoint:
    step: int
    path: str


def list_checkpoints(directory: str) -> list[Checkpoint]:
    """Complete checkpoints in `directory`, oldest first (temporary write directories are ignored)."""
    if not fileio.exists(directory):
        return []
    fs, path = fileio.filesystem(directory)
    found = []
    for entry in fs.ls(path, detail=False):
        match = _NAME.search(entry.rstrip("/"))
        if match:
            found.append(Checkpoint(int(match.group(1)), fileio.join(directory, f"ckpt-{int(match.group(1)):09d}")))
    return sorted(found, key=lambda c: c.step)


def latest_checkpoint(directory: str) -> Checkpoint | None:
    found = list_checkpoints(directory)
    return found[-1] if found else None


def _variable_arrays(variables) -> list[np.ndarray]:
    """Current values as numpy (Keras variables on either backend, tf.distribute mirrored ones)."""
    return [np.asarray(v.numpy() if hasattr(v, "numpy") else v) for v in variables]


def _rng_states(model) -> list:
    """The model's variables that are not weights: dropout seed-generator states."""
    weights = {id(w) for w in model.weights}
    return [v for v in model.variables if id(v) not in weights]


def save_checkpoint(directory: str, step: int, model, optimizer, state: dict, keep: int) -> str:
    """Write `ckpt-<step>` atomically, then delete all but the newest `keep` checkpoints."""
    target = fileio.join(directory, f"ckpt-{step:09d}")
    arrays = {f"model/{i:05d}": a for i, a in enumerate(_variable_arrays(model.weights))}
    arrays.update({f"rng/{i:05d}": a for i, a in enumerate(_variable_arrays(_rng_states(model)))})
    arrays.update({f"optimizer/{i:05d}": a for i, a in enumerate(_variable_arrays(optimizer.variables))})
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)
    fs, root = fileio.filesystem(directory)
    fs.makedirs(root, exist_ok=True)
    with fileio.atomic_output_dir(target) as temp:
        with fileio.open_file(fileio.join(temp, "weights.npz"), "wb") as handle:
            handle.write(buffer.getvalue())
        with fileio.open_file(fileio.join(temp, "state.json"), "w") as handle:
            json.dump(dict(state, step=step), handle, indent=2, sort_keys=True)
    for old in list_checkpoints(directory)[:-keep] if keep > 0 else []:
        fileio.remove(old.path)
    logger.info("saved checkpoint %s", target)
    return target


def load_checkpoint(path: str, model, optimizer=None) -> dict:
    """Restore model weights (and optimizer variables, when given) from `path`; return its state."""
    with fileio.open_file(fileio.join(path, "weights.npz"), "rb") as handle:
        arrays = np.load(io.BytesIO(handle.read()))
        model_arrays = [arrays[k] for k in sorted(k for k in arrays.files if k.startswith("model/"))]
        optimizer_arrays = [arrays[k] for k in sorted(k for k in arrays.files if k.startswith("optimizer/"))]
        rng_arrays = [arrays[k] for k in sorted(k for k in arrays.files if k.startswith("rng/"))]
    assign_all(model.weights, model_arrays, f"{path}: model weights")
    if optimizer is not None:
        assign_all(optimizer.variables, optimizer_arrays, f"{path}: optimizer variables")
        rng_states = _rng_states(model)
        if len(rng_states) == len(rng_arrays):
            assign_all(rng_states, rng_arrays, f"{path}: dropout seed states")
        else:
            logger.warning("%s: dropout seed states not restored (%d saved, %d in the model)", path,
                           len(rng_arrays), len(rng_states))
    with fileio.open_file(fileio.join(path, "state.json"), "r") as handle:
        return json.load(handle)


def assign_all(variables, arrays: list[np.ndarray], what: str) -> None:
    """Assign arrays to variables in order, with a clear error when the shapes disagree."""
    variables = list(variables)
    if len(variables) != len(arrays):
        raise StageError(f"{what}: checkpoint has {len(arrays)} arrays, the model has {len(variables)} variables")
    for variable, array in zip(variables, arrays):
        if tuple(variable.shape) != tuple(array.shape):
            raise StageError(
                f"{what}: {getattr(variable, 'path', variable.name)} has shape {tuple(variable.shape)}, "
                f"checkpoint has {tuple(array.shape)}"
            )
        variable.assign(array)
