"""Where a fine-tuning run keeps its checkpoints, and which of them a re-run resumes.

A run writes its checkpoints (pretraining's: `model.checkpoints.store`, written in the background by
`model.checkpoints.manager.Checkpoints`) under `OUTPUT.checkpoints/`, one folder per training phase:
`multitask/` (the joint training of `--multitask`) and `task/`. The output itself stays one atomic
commit of the finished run (`albert.outputs.atomic_output_dir`); once it is committed the
checkpoints are deleted, except damaged ones that a re-run moved aside (never deleted).

Each checkpoint's state records the run's identity (`identity`: every setting that changes what is
trained, and the backend, whose batch order differs). A re-run of the same settings resumes from
the newest checkpoint; one of other settings moves the checkpoints aside (`move_aside`, never
deleted) and starts again; a finished output of the same settings is the answer itself (nothing is
trained again), and one of other settings is moved aside when the new one is committed.
"""

from __future__ import annotations

import json
import logging

from albert.fs import exists, expand, join, open_file, remove
from albert.outputs import MOVED_ASIDE_LABEL, move_aside, remove_leftovers
from model.checkpoints import store as checkpointing
from model.checkpoints.store import Checkpoint
from model.finetune.config import FinetuneConfig

logger = logging.getLogger(__name__)

PHASES = ("multitask", "task")
NOT_IDENTITY = {
    "output",
    "input_workers",
    "verbose_fit",
    "quiet",
    "checkpoint_every",
    "keep_checkpoints",
}
"""Settings that change how a run goes, not what it trains."""


def identity(config: FinetuneConfig, backend: str) -> dict:
    """What makes two runs the same training (see the module docstring), as JSON reads it back."""
    settings = config.model_dump(exclude=NOT_IDENTITY)
    return json.loads(json.dumps({**settings, "backend": backend}, default=str))


def checkpoints_root(output: str) -> str:
    return output.rstrip("/") + ".checkpoints"


def checkpoints_dir(output: str, phase: str) -> str:
    """`OUTPUT.checkpoints/PHASE`."""
    return join(checkpoints_root(output), phase)


def finished(config: FinetuneConfig, backend: str, wanted: dict | None = None) -> dict | None:
    """The results of a finished run of the same settings in `config.output`, else None; `wanted`
    is the identity to match when the caller's has more than the config (`albert distill`'s
    teacher)."""
    path = join(config.output, "results.json")
    if not exists(path):
        return None
    try:
        with open_file(path, "r") as handle:
            results = json.load(handle)
    except ValueError:
        return None
    return results if results.get("identity") == (wanted or identity(config, backend)) else None


def resumable(
    config: FinetuneConfig, backend: str, wanted: dict | None = None
) -> dict[str, Checkpoint | None]:
    """The newest checkpoint of each phase to resume from. Checkpoints of other settings (than
    `wanted`, as in `finished`) and damaged ones are moved aside first (logged), and the leftovers
    of a write that was killed removed."""
    root, wanted = checkpoints_root(config.output), wanted or identity(config, backend)
    latest = {}
    for phase in PHASES:
        directory = checkpoints_dir(config.output, phase)
        remove_leftovers(join(directory, "ckpt-*"))
        checkpointing.set_aside_damaged(directory)
        latest[phase] = checkpointing.latest_checkpoint(directory)
    found = [checkpoint for checkpoint in latest.values() if checkpoint is not None]
    if any(checkpointing.read_state(c.path).get("identity") != wanted for c in found):
        moved = move_aside(root)
        logger.warning(
            "%s: checkpoints of other settings, moved aside to %s; training starts again",
            root,
            moved,
        )
        return dict.fromkeys(PHASES)
    return latest


def discard(output: str) -> None:
    """Delete the checkpoints of a run whose output is committed; damaged ones that were moved
    aside (`checkpointing.set_aside_damaged`) are never deleted: they stay, named in a warning."""
    root = checkpoints_root(output)
    damaged = expand(join(root, "*", f"ckpt-*.{MOVED_ASIDE_LABEL}-*"))
    if damaged:
        for phase in PHASES:
            for checkpoint in checkpointing.list_checkpoints(checkpoints_dir(output, phase)):
                remove(checkpoint.path)
        logger.warning("%s: the damaged checkpoints moved aside stay: %s", root, ", ".join(damaged))
    elif exists(root):
        remove(root)
