"""Training checkpoints: atomic, the last K kept, enough state for an exact resume.

A checkpoint is a directory `ckpt-<step:09d>/` holding `weights.npz` (every model weight, the
dropout seed states and every optimizer variable — slots, iteration count — each keyed by its
variable path, so a model whose variables are created in another order still restores each array
into its own variable) and `state.json` (step, data position, seed and whatever else the trainer
records). It is written to a temporary sibling and renamed into place
(`albert.outputs.atomic_output_dir`), so a run killed mid-write leaves either the
previous checkpoints or a complete new one, never a half-written one. Works on local paths and
gs://. Saving is two parts: `snapshot` (host copies of the arrays, at the step) and
`write_checkpoint` (serialise, commit, prune), which `model.checkpoints.writer` runs in the
background while training goes on."""

from __future__ import annotations

import io
import json
import logging
import re
import zipfile
import zlib
from dataclasses import dataclass

import numpy as np

from albert.errors import StageError
from albert.fs import exists, filesystem, join, makedirs, open_file, remove
from albert.outputs import atomic_output_dir, move_aside

logger = logging.getLogger(__name__)

_NAME = re.compile(r"ckpt-(\d+)$")


@dataclass(frozen=True)
class Checkpoint:
    step: int
    path: str


def checkpoint_path(directory: str, step: int) -> str:
    """Where the checkpoint of `step` lives in `directory` (`ckpt-<step:09d>`)."""
    return join(directory, f"ckpt-{step:09d}")


def list_checkpoints(directory: str) -> list[Checkpoint]:
    """Complete checkpoints in `directory`, oldest first (temporary write directories are
    ignored)."""
    if not exists(directory):
        return []
    fs, path = filesystem(directory)
    found = []
    for entry in fs.ls(path, detail=False):
        match = _NAME.search(entry.rstrip("/"))
        if match:
            step = int(match.group(1))
            found.append(Checkpoint(step, checkpoint_path(directory, step)))
    return sorted(found, key=lambda c: c.step)


def latest_checkpoint(directory: str) -> Checkpoint | None:
    """The newest whole checkpoint in `directory` (`damage`: a damaged one is passed over)."""
    whole = [c for c in list_checkpoints(directory) if damage(c.path) is None]
    return whole[-1] if whole else None


def damage(path: str) -> str | None:
    """Why the checkpoint at `path` cannot be read (`state.json` not a JSON object with its step,
    `weights.npz` not a whole zip archive: a truncated file has lost its central directory), or
    None when it is whole. Reads the state and the archive's directory, not the arrays."""
    try:
        with open_file(join(path, "state.json"), "r") as handle:
            state = json.load(handle)
        if not isinstance(state, dict) or not isinstance(state.get("step"), int):
            return "state.json: no step recorded"
    except (OSError, ValueError) as error:
        return f"state.json: {type(error).__name__}: {error}"
    try:
        with open_file(join(path, "weights.npz"), "rb") as handle, zipfile.ZipFile(handle) as npz:
            npz.infolist()
    except (OSError, zipfile.BadZipFile) as error:
        return f"weights.npz: {type(error).__name__}: {error}"
    return None


def set_aside_damaged(directory: str) -> list[str]:
    """Move each damaged checkpoint in `directory` (`damage`) aside, never deleted
    (`albert.outputs.move_aside`: `ckpt-N.previous-<time>`), with a warning naming it and why;
    return where they went. A StageError when checkpoints were there and none of them is whole
    (they are moved aside first: the next run starts from step 0). The caller holds the lock of
    the run's output."""
    found = list_checkpoints(directory)
    damaged = [(c, reason) for c in found if (reason := damage(c.path)) is not None]
    moved = []
    for checkpoint, reason in damaged:
        moved.append(move_aside(checkpoint.path))
        logger.warning(
            "%s: a damaged checkpoint (%s), moved aside to %s; resuming from the newest whole one",
            checkpoint.path,
            reason,
            moved[-1],
        )
    if found and len(damaged) == len(found):
        checkpoint, reason = damaged[-1]
        raise StageError(
            f"{checkpoint.path}: a damaged checkpoint ({reason}) and no whole one to resume from; "
            f"{len(damaged)} moved aside (never deleted), the same command starts again from "
            "step 0"
        )
    return moved


def _variable_arrays(variables) -> list[np.ndarray]:
    """Current values as numpy (Keras variables on either backend, tf.distribute mirrored ones)."""
    return [np.asarray(v.numpy() if hasattr(v, "numpy") else v) for v in variables]


def _rng_states(model) -> list:
    """The model's variables that are not weights: dropout seed-generator states."""
    weights = {id(w) for w in model.weights}
    return [v for v in model.variables if id(v) not in weights]


def variable_keys(variables, owner_prefix: bool = False) -> list[str]:
    """A unique key per variable: its path (`layer/.../kernel`); a repeated path gets `#2`, `#3` ...

    `owner_prefix`: drop the path's first part, an optimizer's own name (`adam_1/...`), which
    changes with the number of optimizers a process has built.
    """
    keys, seen = [], {}
    for variable in variables:
        path = getattr(variable, "path", None) or variable.name
        if owner_prefix and "/" in path:
            path = path.split("/", 1)[1]
        seen[path] = seen.get(path, 0) + 1
        keys.append(path if seen[path] == 1 else f"{path}#{seen[path]}")
    return keys


def _keyed(group: str, variables) -> dict[str, np.ndarray]:
    variables = list(variables)
    keys = variable_keys(variables, owner_prefix=group == "optimizer")
    return {f"{group}/{key}": array for key, array in zip(keys, _variable_arrays(variables))}


def snapshot(model, optimizer) -> dict[str, np.ndarray]:
    """Every array a checkpoint holds, copied to host memory now (numpy: training may go on while
    they are written): model weights and optimizer variables keyed by variable path, dropout seed
    states in order."""
    arrays = {**_keyed("model", model.weights), **_keyed("optimizer", optimizer.variables)}
    # dropout seed states: auto-named (seed_generator_<n>), interchangeable, kept in order
    arrays.update({f"rng/{i:05d}": a for i, a in enumerate(_variable_arrays(_rng_states(model)))})
    return arrays


def write_checkpoint(
    directory: str, step: int, arrays: dict[str, np.ndarray], state: dict, keep: int
) -> str:
    """Write `ckpt-<step>` from a `snapshot` atomically, then delete all but the newest `keep`
    committed checkpoints (a write in progress is a `.tmp-` sibling: never counted, never pruned).

    Safe in a thread of its own (`model.checkpoints.writer`): it reads only its arguments. The
    caller holds the lock of the run's output (`albert.locks.output_lock`).
    """
    target = checkpoint_path(directory, step)
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)
    makedirs(directory)
    with atomic_output_dir(target, lock=False, keep_previous=False) as temp:
        with open_file(join(temp, "weights.npz"), "wb") as handle:
            handle.write(buffer.getbuffer())
        with open_file(join(temp, "state.json"), "w") as handle:
            json.dump(dict(state, step=step), handle, indent=2, sort_keys=True)
    for old in list_checkpoints(directory)[:-keep] if keep > 0 else []:
        remove(old.path)
    logger.info("saved checkpoint %s", target)
    return target


def save_checkpoint(directory: str, step: int, model, optimizer, state: dict, keep: int) -> str:
    """`write_checkpoint` of a `snapshot` taken now, in this thread."""
    return write_checkpoint(directory, step, snapshot(model, optimizer), state, keep)


def read_state(path: str) -> dict:
    """The trainer state (`state.json`) of the checkpoint at `path`."""
    with open_file(join(path, "state.json"), "r") as handle:
        return json.load(handle)


def read_groups(path: str) -> dict[str, dict[str, np.ndarray]]:
    """The arrays of the checkpoint at `path` by group (the key's first part: `model`, `optimizer`,
    `rng` and any a trainer adds to its `snapshot`), each `{rest of the key: array}`; the three
    groups `load_checkpoint` restores are always there."""
    file = join(path, "weights.npz")
    groups: dict[str, dict[str, np.ndarray]] = {"model": {}, "optimizer": {}, "rng": {}}
    try:
        with open_file(file, "rb") as handle:
            arrays = np.load(io.BytesIO(handle.read()), allow_pickle=False)
            for name in arrays.files:
                group, _, key = name.partition("/")
                groups.setdefault(group, {})[key] = arrays[name]
    except (zipfile.BadZipFile, zlib.error, EOFError, ValueError) as error:
        raise StageError(
            f"{file}: a damaged checkpoint ({type(error).__name__}: {error}); move {path} aside "
            "to resume from the one before it"
        ) from error
    return groups


def load_checkpoint(path: str, model, optimizer=None) -> dict:
    """Restore model weights (and optimizer variables, when given) from `path`; return its state.

    Arrays are matched to variables by path; checkpoints written before paths were recorded
    (keys `model/00000` ...) are matched by position, with their shapes checked.
    """
    groups = read_groups(path)
    restore(model.weights, groups["model"], f"{path}: model weights")
    if optimizer is not None:
        restore(
            optimizer.variables,
            groups["optimizer"],
            f"{path}: optimizer variables",
            owner_prefix=True,
        )
        rng_states = _rng_states(model)
        if len(rng_states) == len(groups["rng"]):
            restore(rng_states, groups["rng"], f"{path}: dropout seed states")
        else:
            logger.warning(
                "%s: dropout seed states not restored (%d saved, %d in the model)",
                path,
                len(groups["rng"]),
                len(rng_states),
            )
    return read_state(path)


def _positional(keys) -> bool:
    return all(key.isdigit() for key in keys)


def restore(
    variables, arrays: dict[str, np.ndarray], what: str, owner_prefix: bool = False
) -> None:
    """Assign `arrays` (keyed by variable path) to `variables`; StageError naming the first
    mismatch."""
    variables = list(variables)
    if arrays and _positional(arrays):
        assign_all(variables, [arrays[k] for k in sorted(arrays)], what)
        return
    keys = variable_keys(variables, owner_prefix)
    for key, variable in zip(keys, variables):
        if key not in arrays:
            raise StageError(
                f"{what}: the model's {key} {tuple(variable.shape)} is not in the checkpoint"
            )
        if tuple(variable.shape) != tuple(arrays[key].shape):
            raise StageError(
                f"{what}: {key} has shape {tuple(variable.shape)}, checkpoint has "
                f"{tuple(arrays[key].shape)}"
            )
    extra = sorted(set(arrays) - set(keys))
    if extra:
        raise StageError(
            f"{what}: the checkpoint's {extra[0]} {tuple(arrays[extra[0]].shape)} is not in the "
            "model"
            f"{f' (and {len(extra) - 1} more)' if len(extra) > 1 else ''}"
        )
    for key, variable in zip(keys, variables):
        variable.assign(arrays[key])


def assign_all(variables, arrays: list[np.ndarray], what: str) -> None:
    """Assign arrays to variables in order, with a clear error when the shapes disagree."""
    variables = list(variables)
    if len(variables) != len(arrays):
        raise StageError(
            f"{what}: checkpoint has {len(arrays)} arrays, the model has {len(variables)} variables"
        )
    for variable, array in zip(variables, arrays):
        if tuple(variable.shape) != tuple(array.shape):
            raise StageError(
                f"{what}: {getattr(variable, 'path', variable.name)} has shape "
                f"{tuple(variable.shape)}, "
                f"checkpoint has {tuple(array.shape)}"
            )
        variable.assign(array)
