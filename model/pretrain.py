"""Pretrain ALBERT from TFRecord shards: the paper's LAMB, warmup + polynomial decay, mixed precision,
multi-device / multi-worker, gradient accumulation, atomic checkpoints and an exact resume.

    python -m model.pretrain --data DIR --preset albert-base --output DIR [--steps N] [--batch-size B]

Writes OUTPUT/checkpoints/ckpt-*/ (the last K), OUTPUT/metrics.jsonl, OUTPUT/tensorboard/,
OUTPUT/export/model.keras and OUTPUT/export/hf/. Re-running with the same OUTPUT resumes from the
newest checkpoint: weights, optimizer slots, step, learning-rate position and data position.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import sys
import tempfile
import time
from collections.abc import Callable
from typing import Literal

import numpy as np
from pydantic import Field

from albert import fileio
from albert.config import JsonDict, StageConfig
from albert.locks import output_lock
from albert.stage import StageError, naming, stage_main

logger = logging.getLogger(__name__)

PRECISION_POLICIES = {"float32": "float32", "bfloat16": "mixed_bfloat16", "float16": "mixed_float16"}


class PretrainConfig(StageConfig):
    """`model.pretrain` settings; defaults are the paper's (batch 4096, lr 0.00176, 125k steps)."""

    data: str = Field(..., description="directory of TFRecord shards with metadata.json (local or gs://), or a glob")
    output: str = Field(..., description="run directory: checkpoints/, metrics.jsonl, tensorboard/, export/")
    preset: str = Field("albert-base", description="model preset (model.config), e.g. albert-tiny, albert-base")
    architecture: JsonDict = Field(
        default_factory=dict,
        description='AlbertConfig fields over the preset, e.g. {"sharing": "ffn", "embedding_size": 64}',
    )
    vocab_size: int | None = Field(None, gt=0, description="vocabulary size; default from the data's metadata.json")
    spm_model: str | None = Field(None, description="SentencePiece model; its hash must match the data's")
    steps: int = Field(125_000, gt=0, description="training steps (optimizer updates)")
    batch_size: int = Field(4096, gt=0, description="global batch size (sequences per update)")
    learning_rate: float = Field(0.00176, gt=0, description="peak learning rate")
    warmup_steps: int = Field(3125, ge=0, description="linear warmup steps")
    decay_power: float = Field(1.0, gt=0, description="polynomial decay power (1 = linear) to 0 at --steps")
    optimizer: Literal["lamb", "adamw"] = Field("lamb", description="the paper's LAMB, or AdamW")
    weight_decay: float = Field(0.01, ge=0, description="weight decay (not on LayerNorm or bias)")
    clipnorm: float = Field(1.0, ge=0, description="global-norm gradient clipping (0 = off)")
    gradient_accumulation: int = Field(1, gt=0, description="micro-batches per update (batch-size / this each)")
    precision: Literal["float32", "bfloat16", "float16"] = Field("float32", description="float16 uses loss scaling")
    jit_compile: bool | None = Field(
        None, description="XLA-compile the training step (default: on with a GPU/TPU, off on CPU, where it pays off only at batch 32+)"
    )
    init: str | None = Field(None, description="weights only: a checkpoint dir, .keras, HF dir or TF1 checkpoint")
    masking: Literal["auto", "static", "dynamic"] = Field("auto", description="auto = as metadata.json says")
    check_data: bool = Field(True, description="scan every shard first: TFRecord framing, CRCs, ids < vocab_size")
    seed: int = Field(12345, description="seeds initialisation, shuffling and dynamic masking")
    shuffle_buffer: int = Field(10_000, gt=0, description="records in each window of the window shuffle")
    input: Literal["auto", "tf.data", "grain"] = Field(
        "auto", description="training input: auto = Grain on the JAX backend (no TensorFlow), tf.data on TensorFlow; "
                            "both give the same batches"
    )
    log_every: int = Field(100, gt=0, description="steps between training-metric records")
    eval_every: int = Field(1000, ge=0, description="steps between held-out evaluations (0 = only at the end)")
    eval_batches: int = Field(20, gt=0, description="held-out batches per evaluation")
    eval_batch_size: int | None = Field(None, gt=0, description="held-out batch size (default: batch-size, ≤ 256)")
    checkpoint_every: int = Field(1000, gt=0, description="steps between checkpoints")
    keep_checkpoints: int = Field(3, gt=0, description="checkpoints kept (the newest)")
    resume: bool = Field(True, description="continue from the newest checkpoint in OUTPUT/checkpoints")
    tpu: str | None = Field(None, description="TPU name or 'local' (TensorFlow backend)")
    export: bool = Field(True, description="export OUTPUT/export/model.keras, export/hf and export/keras_hub at the end")
    data_license: str | None = Field(None, description="licence of the training text, for the model card")
    progress: bool = Field(True, description="show a progress bar with steps/s and ETA")


# --------------------------------------------------------------------------------------------
# Model, optimizer, initial weights


def build_model(config: PretrainConfig, vocab_size: int):
    import keras

    from model.config import get_preset
    from model.pretraining import AlbertPretrainingModel

    keras.utils.set_random_seed(config.seed)
    return AlbertPretrainingModel(
        get_preset(config.preset, **{**config.architecture, "vocab_size": vocab_size}), name="albert_pretraining"
    )


def build_training_optimizer(config: PretrainConfig):
    import keras

    from model.optimizers import WarmupPolynomialDecay, build_optimizer

    schedule = WarmupPolynomialDecay(config.learning_rate, config.warmup_steps, config.steps, power=config.decay_power)
    optimizer = build_optimizer(config.optimizer, schedule, weight_decay=config.weight_decay, clipnorm=config.clipnorm)
    if config.precision == "float16":
        optimizer = keras.optimizers.LossScaleOptimizer(optimizer)
    return optimizer, schedule


def load_initial_weights(model, path: str) -> None:
    """`--init`: weights only, from one of our checkpoints or anything `load_pretrained` reads."""
    from model.checkpointing import assign_all, load_checkpoint

    if fileio.exists(fileio.join(path, "weights.npz")):
        load_checkpoint(path, model)
        return
    from model.convert import load_pretrained

    with naming(path):  # e.g. Keras refusing an unsafe .keras file
        source = load_pretrained(path)
    assign_all(model.weights, [np.asarray(w) for w in source.get_weights()], f"--init {path}")
    logger.info("initialised weights from %s", path)


def weights_finite(model) -> bool:
    """Whether every floating-point weight of `model` is finite (no NaN or inf)."""
    for variable in model.weights:
        value = np.asarray(variable.numpy() if hasattr(variable, "numpy") else variable)
        if np.issubdtype(value.dtype, np.floating) and not np.isfinite(value).all():
            return False
    return True


def diverged(config: PretrainConfig, step: int, what: str) -> StageError:
    """The error that stops a run whose loss or weights became non-finite: names the step and what is kept."""
    from model.checkpointing import latest_checkpoint

    last = latest_checkpoint(fileio.join(config.output, "checkpoints"))
    kept = f"the last finite checkpoint {last.path} (step {last.step}) is kept" if last else "no checkpoint was written"
    return StageError(
        f"{config.output}: training diverged: the {what} became non-finite at step {step} "
        f"(--learning-rate {config.learning_rate}); stopped, {kept}, nothing exported"
    )


def weights_digest(model) -> str:
    digest = hashlib.sha256()
    for variable in model.weights:
        digest.update(np.ascontiguousarray(np.asarray(variable.numpy() if hasattr(variable, "numpy") else variable)))
    return digest.hexdigest()


# --------------------------------------------------------------------------------------------
# Training steps: TensorFlow (tf.distribute custom loop) and JAX (stateless, jit)


def _micro_batches(batch: dict, accumulation: int, reshape) -> dict:
    return {k: reshape(v, accumulation) for k, v in batch.items()}


def tf_train_step(model, optimizer, strategy, accumulation: int, jit_compile: bool):
    """batch (distributed) -> summed metrics [6]; one optimizer update per call.

    Each replica computes gradients of its share of the global loss (normalised by the global
    masked-token weight and sequence count carried in the batch), summed over its micro-batches;
    the replica gradients are summed across devices and workers, clipped by global norm and applied
    once (cross-replica), so every replica and worker holds identical weights.
    """
    import tensorflow as tf

    from model.pretrain_eval import pretraining_loss
    from model.pretraining import model_inputs

    variables = model.trainable_variables

    def gradients(batch):
        with tf.GradientTape() as tape:
            outputs = model(model_inputs(batch), training=True)
            loss, sums = pretraining_loss(outputs, batch, batch["mlm_denominator"][0], batch["sop_denominator"][0])
            scaled = optimizer.scale_loss(loss)
        grads = tape.gradient(scaled, variables)
        return [tf.convert_to_tensor(g) for g in grads], sums

    def replica_step(batch):
        if accumulation == 1:
            return gradients(batch)
        micro = _micro_batches(
            batch, accumulation, lambda v, k: tf.reshape(v, tf.concat([[k, -1], tf.shape(v)[1:]], 0))
        )

        def body(i, grads, sums):
            g, s = gradients({k: v[i] for k, v in micro.items()})
            return i + 1, [a + b for a, b in zip(grads, g)], sums + s

        _, grads, sums = tf.while_loop(
            lambda i, *_: i < accumulation,
            body,
            (tf.constant(0), [tf.zeros_like(v) for v in variables], tf.zeros([6])),
        )
        return grads, sums

    compiled = tf.function(replica_step, jit_compile=jit_compile, autograph=False)

    def reduced_replica_step(batch):
        grads, sums = compiled(batch)
        context = tf.distribute.get_replica_context()
        return context.all_reduce(tf.distribute.ReduceOp.SUM, grads), context.all_reduce(tf.distribute.ReduceOp.SUM, sums)

    def first(value):
        return strategy.experimental_local_results(value)[0]

    @tf.function(autograph=False)
    def step(batch):
        grads, sums = strategy.run(reduced_replica_step, args=(batch,))
        optimizer.apply([first(g) for g in grads], variables)
        return first(sums)

    return step


class JaxState:
    """The JAX training state (trainable, non-trainable, optimizer values) outside the Keras variables."""

    def __init__(self, model, optimizer):
        self.model, self.optimizer = model, optimizer
        self.values = (
            [v.value for v in model.trainable_variables],
            [v.value for v in model.non_trainable_variables],
            [v.value for v in optimizer.variables],
        )

    def sync_to_keras(self) -> None:
        trainable, non_trainable, optimizer_values = self.values
        for variables, values in (
            (self.model.trainable_variables, trainable),
            (self.model.non_trainable_variables, non_trainable),
            (self.optimizer.variables, optimizer_values),
        ):
            for variable, value in zip(variables, values):
                variable.assign(value)


def jax_train_step(model, optimizer, accumulation: int, distribution=None):
    """(state values, numpy batch) -> (new state values, summed metrics [6]), jit-compiled."""
    import jax
    import jax.numpy as jnp

    from model.pretrain_eval import pretraining_loss
    from model.pretraining import model_inputs

    def loss_fn(trainable, non_trainable, batch):
        outputs, non_trainable = model.stateless_call(trainable, non_trainable, model_inputs(batch), training=True)
        loss, sums = pretraining_loss(outputs, batch, batch["mlm_denominator"][0], batch["sop_denominator"][0])
        return loss, (sums, non_trainable)

    grad_fn = jax.value_and_grad(loss_fn, has_aux=True)

    @jax.jit
    def step(values, batch):
        trainable, non_trainable, optimizer_values = values
        if accumulation == 1:
            (_, (sums, non_trainable)), grads = grad_fn(trainable, non_trainable, batch)
        else:
            micro = _micro_batches(batch, accumulation, lambda v, k: v.reshape((k, -1) + v.shape[1:]))

            def body(carry, micro_batch):
                grads, sums, non_trainable = carry
                (_, (s, non_trainable)), g = grad_fn(trainable, non_trainable, micro_batch)
                return (jax.tree_util.tree_map(jnp.add, grads, g), sums + s, non_trainable), None

            zeros = jax.tree_util.tree_map(jnp.zeros_like, trainable)
            (grads, sums, non_trainable), _ = jax.lax.scan(body, (zeros, jnp.zeros(6), non_trainable), micro)
        trainable, optimizer_values = optimizer.stateless_apply(optimizer_values, grads, trainable)
        return (trainable, non_trainable, optimizer_values), sums

    def place(batch):
        if distribution is None:
            return batch
        import keras

        return {
            k: keras.distribution.distribute_tensor(v, distribution.get_data_layout(v.shape)) for k, v in batch.items()
        }

    return step, place


# --------------------------------------------------------------------------------------------
# Records: metrics.jsonl, TensorBoard, progress


class MetricsLog:
    """metrics.jsonl: one JSON record per line, rewritten whole at each record, never appended.

    Each write goes through `fileio.write_atomic` (a rename on disks, one upload on object stores),
    so gs:// keeps every record and a kill leaves the previous complete file. On resume it keeps the
    first `kept` records (those written before the checkpoint being resumed; None: those up to
    `resume_step`), so a resumed run ends with the same records as one never interrupted. A line
    that does not parse (a torn write by an older version) is dropped with a warning.
    """

    def __init__(self, path: str, kept: int | None = 0, resume_step: int = 0):
        self.path = path
        lines = self.read(path)
        if kept is None:  # a checkpoint from before record counts were kept: by step
            self.lines = [line for line in lines if json.loads(line).get("step", 0) <= resume_step]
        else:
            self.lines = lines[:kept]

    @staticmethod
    def read(path: str) -> list[str]:
        try:
            with fileio.open_file(path, "r") as handle:
                lines = [line.strip() for line in handle if line.strip()]
        except FileNotFoundError:
            return []
        kept = []
        for number, line in enumerate(lines, start=1):
            try:
                json.loads(line)
            except ValueError:
                logger.warning("%s: line %d is not complete JSON (an interrupted write); dropped", path, number)
                continue
            kept.append(line)
        return kept

    def __len__(self) -> int:
        return len(self.lines)

    def append(self, record: dict) -> None:
        self.lines.append(json.dumps(record, sort_keys=True))
        fileio.write_atomic(self.path, "".join(line + "\n" for line in self.lines).encode())


class RunLog:
    """metrics.jsonl (MetricsLog) + TensorBoard scalars + progress bar + the caller's `on_metrics` (chief only)."""

    def __init__(self, output: str, total_steps: int, kept_records: int | None, resume_step: int, enabled: bool,
                 progress: bool, on_metrics):
        self.enabled, self.on_metrics = enabled, on_metrics
        self.path = fileio.join(output, "metrics.jsonl")
        self.metrics = None
        self.writer = None
        self.progbar = None
        if not enabled:
            return
        self.metrics = MetricsLog(self.path, kept_records, resume_step)
        from model.tensorboard_events import ScalarWriter

        self.writer = ScalarWriter(fileio.join(output, "tensorboard"))
        if progress:
            import keras

            self.progbar = keras.utils.Progbar(total_steps, stateful_metrics=["loss", "mlm_acc", "sop_acc", "steps/s"])

    def __len__(self) -> int:
        return len(self.metrics) if self.metrics is not None else 0

    def record(self, record: dict) -> None:
        if not self.enabled:
            return
        self.metrics.append(record)
        self.writer.write(record["step"], {
            f"{record['split']}/{name}": value for name, value in record.items()
            if name not in ("step", "split") and isinstance(value, (int, float))
        })
        if self.on_metrics is not None:
            self.on_metrics(dict(record))

    def progress(self, step: int, metrics: dict, steps_per_second: float) -> None:
        if self.progbar is not None:
            self.progbar.update(
                step,
                [
                    ("loss", metrics["loss"]),
                    ("mlm_acc", metrics["masked_lm_accuracy"]),
                    ("sop_acc", metrics["sop_accuracy"]),
                    ("steps/s", steps_per_second),
                ],
            )


# --------------------------------------------------------------------------------------------
# The run


def _export(model, config: PretrainConfig, spec, heldout: dict) -> dict:
    """export/model.keras, export/hf (Hugging Face) and export/keras_hub, written atomically."""
    from model.exports import write_exports

    export_dir = fileio.join(config.output, "export")
    paths = {}
    with fileio.atomic_output_dir(export_dir) as temp:
        with tempfile.TemporaryDirectory() as local:
            keras_path = os.path.join(local, "model.keras")
            model.save(keras_path)
            fs, target = fileio.filesystem(fileio.join(temp, "model.keras"))
            fs.put(keras_path, target)
        paths["keras"] = fileio.join(export_dir, "model.keras")
        names = write_exports(model, temp, config.model_dump(), spec.metadata, heldout, config.spm_model,
                              config.data_license)
        paths.update({kind: fileio.join(export_dir, name) for kind, name in names.items()})
    return paths


def _resolve_vocab(config: PretrainConfig, spec) -> tuple[int, str | None]:
    sha = None
    size = config.vocab_size
    if config.spm_model:
        import sentencepiece as spm

        with fileio.open_file(config.spm_model, "rb") as handle:
            proto = handle.read()
        sha = hashlib.sha256(proto).hexdigest()
        size = size or spm.SentencePieceProcessor(model_proto=proto).get_piece_size()
    size = size or spec.vocab_size
    if not size:
        raise StageError(f"{config.data}: metadata.json gives no vocab_size; pass --vocab-size or --spm-model")
    return int(size), sha


class IncompatibleOutputError(StageError):
    """OUTPUT holds the checkpoints of another training run: continuing them would not be this run."""


IDENTITY_FIELDS = ("preset", "architecture", "seed", "batch_size", "optimizer", "precision", "shuffle_buffer")
"""Settings whose change makes a checkpoint another run's (with the vocabulary, the data and --init).
Everything else (steps, the learning-rate schedule, logging, evaluation, checkpointing, the code)
may change between a run and its resume: the run continues from its newest checkpoint."""


def data_digest(spec) -> str:
    """The training data's identity: metadata.json and each shard's name and size (no timestamps,
    so data rewritten byte for byte by a re-run of its stage is the same data)."""
    digest = hashlib.sha256(json.dumps(spec.metadata, sort_keys=True).encode())
    for path in spec.files:
        digest.update(f"{path.rsplit('/', 1)[-1]}\0{fileio.listing_digest(path)}\0".encode())
    return digest.hexdigest()


def training_identity(config: PretrainConfig, spec, vocab_size: int, vocab_sha: str | None) -> dict:
    """What a checkpoint must share with this run to be resumed by it (recorded in every checkpoint)."""
    return {
        **{name: getattr(config, name) for name in IDENTITY_FIELDS},
        "vocab_size": vocab_size, "vocab_sha256": vocab_sha, "masking": spec.masking,
        "max_seq_length": spec.max_seq_length, "data": data_digest(spec),
        "init": fileio.listing_digest(config.init) if config.init else None,
    }


def resumable_checkpoint(config: PretrainConfig, identity: dict):
    """The checkpoint this run continues (None: a fresh start). Never deletes anything.

    IncompatibleOutputError when OUTPUT's checkpoints belong to another run (or resume is off);
    StageError when they are already past --steps.
    """
    from model import checkpointing

    latest = checkpointing.latest_checkpoint(fileio.join(config.output, "checkpoints"))
    if latest is None:
        return None
    if not config.resume:
        raise IncompatibleOutputError(
            f"{config.output} holds a checkpoint at step {latest.step} and resume is off: use a new --output"
        )
    saved = checkpointing.read_state(latest.path)
    recorded = saved.get("identity") or {k: saved[k] for k in ("seed", "batch_size", "preset") if k in saved}
    changed = [name for name in identity if name in recorded and recorded[name] != identity[name]]
    if changed:
        what = ", ".join(f"{name} {_short(recorded[name])} -> {_short(identity[name])}" for name in changed)
        raise IncompatibleOutputError(
            f"{config.output} holds the checkpoints of another training run ({what}): use a new --output "
            f"(the flows move the old output aside)"
        )
    if latest.step > config.steps:
        raise StageError(
            f"{config.output}: its newest checkpoint is at step {latest.step}, past --steps {config.steps}; "
            f"pass --steps {latest.step} or more to continue it, or use a new --output"
        )
    return latest


def _short(value) -> str:
    text = repr(value)
    return text[:12] + "…" if isinstance(value, str) and len(value) == 64 else text


def check_output(config: PretrainConfig) -> None:
    """Fail as `run(config)` would on an OUTPUT it cannot continue, without building the model."""
    from model import pretrain_records

    spec = pretrain_records.inspect_data(config.data)
    if config.masking != "auto":
        spec.masking = config.masking
    resumable_checkpoint(config, training_identity(config, spec, *_resolve_vocab(config, spec)))


def run(config: PretrainConfig, on_metrics: Callable[[dict], None] | None = None) -> dict:
    """Train per `config`; return final training and held-out metrics, paths and throughput.

    `on_metrics` (optional) receives every record written to metrics.jsonl (e.g. for progress
    artifacts in a Prefect flow).
    """
    import keras

    from model import checkpointing, distribute, pretrain_input, pretrain_records
    from model.pretrain_eval import SUM_NAMES, eval_step_fn, evaluate_batches, metrics_from_sums

    backend = keras.config.backend()
    if backend == "jax":
        if config.precision == "float16":
            raise StageError("--precision float16 (loss scaling) needs the TensorFlow backend; use bfloat16 on JAX")
        strategy, distribution = None, distribute.jax_data_parallel()
        replicas = len(distribution.device_mesh.devices.flatten()) if distribution else 1
    else:  # before any TensorFlow op: MultiWorkerMirroredStrategy must configure the runtime first
        strategy, distribution = distribute.select_strategy(config.tpu), None
        replicas = strategy.num_replicas_in_sync
    spec = pretrain_records.inspect_data(config.data)
    if config.masking != "auto":
        spec.masking = config.masking
    vocab_size, vocab_sha = _resolve_vocab(config, spec)
    identity = training_identity(config, spec, vocab_size, vocab_sha)
    previous_policy = keras.config.dtype_policy()
    keras.config.set_dtype_policy(PRECISION_POLICIES[config.precision])
    if distribution is not None:
        keras.distribution.set_distribution(distribution)
    held = contextlib.ExitStack()  # the output's lock, held by the chief until the run ends
    try:
        if config.batch_size % (replicas * config.gradient_accumulation):
            raise StageError(
                f"--batch-size {config.batch_size} must be divisible by replicas ({replicas}) x "
                f"--gradient-accumulation ({config.gradient_accumulation})"
            )
        chief = distribute.is_chief()
        if chief:
            held.enter_context(output_lock(config.output))
            for name in ("checkpoints/ckpt-*", "export", "metrics.jsonl"):
                fileio.remove_leftovers(fileio.join(config.output, name))
        latest = resumable_checkpoint(config, identity)
        scope = strategy.scope() if strategy is not None else contextlib.nullcontext()
        with scope:
            model = build_model(config, vocab_size)
            pretrain_records.check_compatible(
                spec, vocab_size=vocab_size, max_position_embeddings=model.config.max_position_embeddings,
                vocab_sha256=vocab_sha,
            )
            optimizer, schedule = build_training_optimizer(config)
            optimizer.build(model.trainable_variables)
        if config.check_data:
            counts = pretrain_records.check_shards(spec.files, vocab_size)
            pretrain_records.check_heldout_not_empty(spec, counts)

        checkpoint_dir = fileio.join(config.output, "checkpoints")
        state = {"step": 0, "epoch": 0, "batch_in_epoch": 0, "records": 0}
        if latest is not None:
            state = checkpointing.load_checkpoint(latest.path, model, optimizer)
            logger.info("resumed from %s (step %d)", latest.path, state["step"])
        elif config.init:
            load_initial_weights(model, config.init)

        step, epoch, batch_in_epoch = state["step"], state["epoch"], state["batch_in_epoch"]
        log = RunLog(config.output, config.steps, state.get("records"), step, chief, config.progress, on_metrics)
        eval_batch_size = config.eval_batch_size or min(config.batch_size, 256)

        if backend == "jax":
            jax_state = JaxState(model, optimizer)
            jax_step, place = jax_train_step(model, optimizer, config.gradient_accumulation, distribution)

            def train_step(batch):
                jax_state.values, sums = jax_step(jax_state.values, place(batch))
                return sums

            def sync():
                jax_state.sync_to_keras()

            batches_of = pretrain_input.numpy_batches
        else:
            import tensorflow as tf

            jit = config.jit_compile
            if jit is None:
                jit = bool(config.tpu or tf.config.list_physical_devices("GPU"))
            train_step = tf_train_step(model, optimizer, strategy, config.gradient_accumulation, jit)

            def sync():
                return None

            def batches_of(dataset):
                if replicas == 1 and not distribute.cluster_size():
                    return iter(dataset)
                options = tf.data.Options()
                options.experimental_distribute.auto_shard_policy = tf.data.experimental.AutoShardPolicy.DATA
                return iter(strategy.experimental_distribute_dataset(dataset.with_options(options)))

        eval_step = None

        def heldout_metrics() -> dict:
            nonlocal eval_step
            sync()
            eval_step = eval_step or eval_step_fn(model)
            heldout = pretrain_input.heldout_batches(spec, eval_batch_size, config.input, seed=config.seed,
                                                     max_batches=config.eval_batches)
            metrics = evaluate_batches(model, heldout, eval_step)
            if not all(np.isfinite(list(metrics.values()))):
                raise diverged(config, step, "held-out loss")
            return metrics

        def save():
            sync()
            if not weights_finite(model):  # never let a NaN checkpoint replace the finite ones
                raise diverged(config, step, "model weights")
            record = {"step": step, "epoch": epoch, "batch_in_epoch": batch_in_epoch, "seed": config.seed,
                      "batch_size": config.batch_size, "preset": config.preset, "identity": identity,
                      "records": len(log), "log_window": window.tolist(), "window_steps": window_steps}
            if chief:
                return checkpointing.save_checkpoint(
                    checkpoint_dir, step, model, optimizer, record, config.keep_checkpoints
                )
            return None

        # the training-metric window in progress (restored on resume: records match an uninterrupted run)
        window = np.asarray(state.get("log_window", np.zeros(len(SUM_NAMES))), np.float64)
        window_steps = int(state.get("window_steps", 0))
        window_start, timed_steps = time.perf_counter(), 0
        train_metrics: dict = {}
        heldout: dict = {}
        total_time, total_steps = 0.0, 0
        while step < config.steps:
            dataset = pretrain_input.train_batches(
                spec, config.batch_size, config.input, epoch=epoch, seed=config.seed, skip_batches=batch_in_epoch,
                shuffle_buffer=config.shuffle_buffer,
            )
            seen = 0
            for batch in batches_of(dataset):
                sums = np.asarray(train_step(batch), np.float64)
                step, batch_in_epoch, seen, window_steps = step + 1, batch_in_epoch + 1, seen + 1, window_steps + 1
                timed_steps += 1
                if not np.isfinite(sums).all():
                    raise diverged(config, step, "training loss")
                window += sums
                if step % config.log_every == 0 or step == config.steps:
                    elapsed = time.perf_counter() - window_start
                    total_time, total_steps = total_time + elapsed, total_steps + timed_steps
                    train_metrics = metrics_from_sums(window)
                    steps_per_second = timed_steps / max(elapsed, 1e-9)
                    log.record({
                        "step": step, "split": "train", **train_metrics,
                        "learning_rate": float(schedule(step - 1)), "steps_per_second": steps_per_second,
                        "sequences_per_second": steps_per_second * config.batch_size,
                    })
                    log.progress(step, train_metrics, steps_per_second)
                    window[:] = 0
                    window_steps = timed_steps = 0
                if config.eval_every and step % config.eval_every == 0 and step < config.steps:
                    log.record({"step": step, "split": "heldout", **heldout_metrics()})
                if step % config.checkpoint_every == 0 and step < config.steps:
                    save()
                if timed_steps == 0:
                    window_start = time.perf_counter()
                if step >= config.steps:
                    break
            if step < config.steps:
                if seen == 0 and batch_in_epoch == 0:
                    raise StageError(f"{config.data}: fewer training records than one batch of {config.batch_size}")
                epoch, batch_in_epoch = epoch + 1, 0

        heldout = heldout_metrics()
        if latest is not None and latest.step == step:  # finished before: its records and checkpoint stand
            final_checkpoint = latest.path
        else:  # the final record first, so that the final checkpoint counts it
            log.record({"step": step, "split": "heldout", **heldout})
            final_checkpoint = save()
        exports = _export(model, config, spec, heldout) if config.export and chief else {}
        return {
            "steps": step,
            "train": train_metrics,
            "heldout": heldout,
            "checkpoint": final_checkpoint,
            "export": exports,
            "metrics": log.path if chief else None,
            "backend": backend,
            "replicas": replicas,
            "sequences_per_second": total_steps * config.batch_size / total_time if total_time else None,
            "weights_sha256": weights_digest(model),
        }
    finally:
        held.close()
        keras.config.set_dtype_policy(previous_policy)
        if backend == "jax":
            keras.distribution.set_distribution(None)


def main(argv=None, prog="python -m model.pretrain") -> int:
    return stage_main(PretrainConfig, run, argv, prog=prog, description=__doc__)


if __name__ == "__main__":
    sys.exit(main())
