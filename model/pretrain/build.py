"""The model, its optimizer and schedule, `--init`'s initial weights, and the trained weights'
digest."""

from __future__ import annotations

import contextlib
import hashlib
import logging

import numpy as np

from albert.errors import StageError, naming
from albert.fs import exists, join
from model.checkpoints import store as checkpointing
from model.checkpoints.store import assign_all, load_checkpoint
from model.input import records as pretrain_records
from model.input import source as pretrain_input
from model.network.config import get_preset
from model.pretrain.config import PretrainConfig
from model.pretrain.identity import vocab_origin
from model.runtime import keras_seeds

logger = logging.getLogger(__name__)


def build_model(config: PretrainConfig, vocab_size: int):
    """The model `config.objective` trains: an `AlbertPretrainingModel` (mlm) or an
    `AlbertElectraModel` (rtd), seeded by --seed."""
    import keras  # heavy: Keras loads its backend; this module stays importable without it

    # heavy: loads keras, tensorflow; this module stays importable without it
    from model.network.electra import AlbertElectraModel
    from model.network.pretraining_model import AlbertPretrainingModel

    tf_data = not pretrain_input.uses_grain(config.input)
    keras_seeds.set_random_seed(config.seed, tensorflow=keras.config.backend() != "jax" or tf_data)
    architecture = get_preset(config.preset, **{**config.architecture, "vocab_size": vocab_size})
    with keras_seeds.drawn_from(config.seed):  # the same model on every host, whatever threads do
        if config.objective == "rtd":
            return AlbertElectraModel(
                architecture, config.generator_hidden_fraction, name="albert_electra"
            )
        return AlbertPretrainingModel(architecture, name="albert_pretraining")


def build_training_optimizer(config: PretrainConfig):
    """(optimizer, step schedule); under --time-budget the schedule is None and the optimizer's
    learning rate a variable the trainer sets before each step."""
    import keras  # heavy: Keras loads its backend; this module stays importable without it

    # heavy: loads keras, tensorflow; this module stays importable without it
    from model.optimization.optimizers import WarmupPolynomialDecay, build_optimizer

    schedule = None
    if config.budget_seconds is None:
        schedule = WarmupPolynomialDecay(
            config.learning_rate, config.warmup_steps, config.steps, power=config.decay_power
        )
    optimizer = build_optimizer(
        config.optimizer,
        schedule or float(config.learning_rate),
        weight_decay=config.weight_decay,
        clipnorm=config.clipnorm,
    )
    if config.precision == "float16":
        optimizer = keras.optimizers.LossScaleOptimizer(optimizer)
    return optimizer, schedule


def load_initial_weights(model, path: str) -> None:
    """`--init`: weights only, from one of our checkpoints or anything `load_pretrained` reads.
    An RTD model takes such a model as its discriminator, and the generator an RTD export wrote
    beside it (`generator/model.keras`), where there is one."""

    if exists(join(path, "weights.npz")):
        load_checkpoint(path, model)
        return
    # heavy: loads keras, tensorflow; this module stays importable without it
    from model.conversion.convert import load_pretrained
    from model.network.electra import AlbertElectraModel

    with naming(path):  # e.g. Keras refusing an unsafe .keras file
        source = load_pretrained(path)
    if isinstance(model, AlbertElectraModel):
        load_electra_parts(model, source, path)
    else:
        assign_all(model.weights, [np.asarray(w) for w in source.get_weights()], f"--init {path}")
    logger.info("initialised weights from %s", path)


def load_electra_parts(model, discriminator, path: str) -> None:
    """`--init` of an RTD model: `discriminator` (loaded from `path`), and the generator exported
    beside a `.keras` path when it is there; StageError on a shape mismatch."""
    from model.conversion.convert import load_pretrained
    from model.network.electra import load_parts

    sibling = join(path.rsplit("/", 1)[0], "generator", "model.keras") if "/" in path else None
    generator = None
    if path.endswith(".keras") and sibling and exists(sibling):
        with naming(sibling):
            generator = load_pretrained(sibling)
    else:
        logger.warning(
            "--init %s: no generator beside it (generator/model.keras): the generator starts "
            "from random weights",
            path,
        )
    try:
        load_parts(model, discriminator, generator)
    except ValueError as error:
        raise StageError(f"--init {path}: {error}") from None


def weights_digest(model) -> str:
    digest = hashlib.sha256()
    for variable in model.weights:
        digest.update(
            np.ascontiguousarray(
                np.asarray(variable.numpy() if hasattr(variable, "numpy") else variable)
            )
        )
    return digest.hexdigest()


def build_training(config: PretrainConfig, spec, strategy, vocab_size: int, vocab_sha: str | None):
    """(model, optimizer, schedule), built in `strategy`'s scope, the model checked against the
    data."""

    with strategy.scope() if strategy is not None else contextlib.nullcontext():
        model = build_model(config, vocab_size)
        pretrain_records.check_compatible(
            spec,
            vocab_size=vocab_size,
            max_position_embeddings=model.config.max_position_embeddings,
            vocab_sha256=vocab_sha,
            vocab_origin=vocab_origin(config),
            spm_model=config.spm_model,
        )
        optimizer, schedule = build_training_optimizer(config)
        optimizer.build(model.trainable_variables)
    return model, optimizer, schedule


def restore(config: PretrainConfig, latest, model, optimizer) -> dict:
    """The training position to start from: `latest` checkpoint's (loaded), else step 0 (from
    --init)."""

    if latest is not None:
        state = checkpointing.load_checkpoint(latest.path, model, optimizer)
        logger.info("resumed from %s (step %d)", latest.path, state["step"])
        return state
    if config.init:
        load_initial_weights(model, config.init)
    return {"step": 0, "epoch": 0, "batch_in_epoch": 0, "records": 0}
