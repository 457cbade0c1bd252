"""A training run's identity: what a checkpoint in OUTPUT must share with this run to be resumed
by it."""

from __future__ import annotations

import hashlib
import json

import sentencepiece as spm

from albert.errors import StageError
from albert.fs import join, listing_digest, open_file
from model.checkpoints import store as checkpointing
from model.input import records as pretrain_records
from model.pretrain.config import PretrainConfig


def data_spec(config: PretrainConfig):
    """The training data's description (`pretrain_records.inspect_data`), masking as --masking
    says."""

    spec = pretrain_records.inspect_data(config.data)
    if config.masking != "auto":
        spec.masking = config.masking
    return spec


def resolve_vocab(config: PretrainConfig, spec) -> tuple[int, str | None]:
    """(vocabulary size, sha256 of --spm-model or None): from the flags, else the data's
    metadata.json."""
    sha = None
    size = config.vocab_size
    if config.spm_model:
        with open_file(config.spm_model, "rb") as handle:
            proto = handle.read()
        sha = hashlib.sha256(proto).hexdigest()
        size = size or spm.SentencePieceProcessor(model_proto=proto).get_piece_size()
    size = size or spec.vocab_size
    if not size:
        raise StageError(
            f"{config.data}: metadata.json gives no vocab_size; pass --vocab-size or --spm-model"
        )
    return int(size), sha


def vocab_origin(config: PretrainConfig) -> str:
    """Where `resolve_vocab`'s size comes from, for error messages: the flag and its value."""
    if config.vocab_size:
        return f"--vocab-size {config.vocab_size}"
    return f"--spm-model {config.spm_model}" if config.spm_model else "the data's metadata.json"


class IncompatibleOutputError(StageError):
    """OUTPUT holds the checkpoints of another training run: continuing them would not be this
    run."""


IDENTITY_FIELDS = (
    "preset",
    "architecture",
    "seed",
    "batch_size",
    "optimizer",
    "precision",
    "shuffle_buffer",
    "length_buckets",
    "packing",
    "packing_instances",
)
"""Settings whose change makes a checkpoint another run's (with the vocabulary, the data and
--init). Everything else (steps, the learning-rate schedule, logging, evaluation, checkpointing,
the code) may change between a run and its resume: the run continues from its newest checkpoint."""


def data_digest(spec) -> str:
    """The training data's identity: metadata.json and each shard's name and size (no timestamps,
    so data rewritten byte for byte by a re-run of its stage is the same data)."""
    digest = hashlib.sha256(json.dumps(spec.metadata, sort_keys=True).encode())
    for path in spec.files:
        digest.update(f"{path.rsplit('/', 1)[-1]}\0{listing_digest(path)}\0".encode())
    return digest.hexdigest()


def training_identity(config: PretrainConfig, spec, vocab_size: int, vocab_sha: str | None) -> dict:
    """What a checkpoint must share with this run to be resumed by it (recorded in every
    checkpoint)."""
    return {
        # --length-buckets and --packing left to their defaults (None, auto) are the checkpoint's
        # (`model.pretrain.loop.with_length_buckets`): they match whatever it recorded
        **{
            name: getattr(config, name)
            for name in IDENTITY_FIELDS
            if getattr(config, name) not in (None, "auto")
        },
        "vocab_size": vocab_size,
        "vocab_sha256": vocab_sha,
        "masking": spec.masking,
        "max_seq_length": spec.max_seq_length,
        "data": data_digest(spec),
        "init": listing_digest(config.init) if config.init else None,
        # the optimizer's variables differ: a budget's learning rate is one of them
        "schedule": "time-budget" if config.time_budget is not None else "steps",
        # another model: a generator beside the discriminator (absent for mlm, as before)
        **(
            {"objective": "rtd", "generator_hidden_fraction": config.generator_hidden_fraction}
            if config.objective == "rtd"
            else {}
        ),
    }


def resumable_checkpoint(config: PretrainConfig, identity: dict):
    """The checkpoint this run continues (None: a fresh start). Never deletes anything.

    IncompatibleOutputError when OUTPUT's checkpoints belong to another run (or resume is off);
    StageError when they are already past --steps.
    """

    latest = checkpointing.latest_checkpoint(join(config.output, "checkpoints"))
    if latest is None:
        return None
    if not config.resume:
        raise IncompatibleOutputError(
            f"{config.output} holds a checkpoint at step {latest.step} and resume is off: use a "
            "new --output"
        )
    saved = checkpointing.read_state(latest.path)
    recorded = saved.get("identity") or {
        k: saved[k] for k in ("seed", "batch_size", "preset") if k in saved
    }
    # an mlm run records no objective (as before rtd): absent on either side means mlm
    recorded, identity = {"objective": "mlm", **recorded}, {"objective": "mlm", **identity}
    changed = [name for name in identity if name in recorded and recorded[name] != identity[name]]
    if changed:
        what = ", ".join(
            f"{name} {_short(recorded[name])} -> {_short(identity[name])}" for name in changed
        )
        raise IncompatibleOutputError(
            f"{config.output} holds the checkpoints of another training run ({what}): use a new "
            "--output "
            f"(the flows move the old output aside)"
        )
    if config.time_budget is None and latest.step > config.steps:
        raise StageError(
            f"{config.output}: its newest checkpoint is at step {latest.step}, past --steps "
            f"{config.steps}; "
            f"pass --steps {latest.step} or more to continue it, or use a new --output"
        )
    return latest


def _short(value) -> str:
    text = repr(value)
    return text[:12] + "…" if isinstance(value, str) and len(value) == 64 else text


def check_output(config: PretrainConfig) -> None:
    """Fail as `run(config)` would on an OUTPUT it cannot continue, without building the model."""
    spec = data_spec(config)
    resumable_checkpoint(config, training_identity(config, spec, *resolve_vocab(config, spec)))
