"""Pretrain ALBERT from TFRecord shards: the paper's LAMB, warmup + polynomial decay, mixed
precision, multi-device / multi-worker, gradient accumulation, atomic checkpoints and an exact
resume.

    python -m model.pretrain --data DIR --preset albert-base --output DIR [--steps N] [--batch-size
    B] KERAS_BACKEND=jax python -m model.pretrain ... --coordinator HOST:PORT --num-processes N \
        --process-id I    (on each of N hosts; docs/pretrain.md "Several hosts")

Writes OUTPUT/checkpoints/ckpt-*/ (the last K), OUTPUT/metrics.jsonl, OUTPUT/tensorboard/,
OUTPUT/export/model.keras and OUTPUT/export/hf/. Re-running with the same OUTPUT resumes from the
newest checkpoint: weights, optimizer slots, step, learning-rate position and data position. SIGTERM
or SIGINT saves a checkpoint at the step in flight and exits 75 (docs/pretrain.md, "Preemptible
accelerators"); checkpoints are written in the background.
"""

# The package, one role a module: config (PretrainConfig), build (model, optimizer, --init),
# identity (what a checkpoint must share to be resumed), tf_step / jax_step (the backends' training
# steps), batches, trainer (the training position and what advances it), run_log (metrics.jsonl,
# TensorBoard, progress), divergence, export, loop (`run`). Every public name is importable from
# `model.pretrain`.

from __future__ import annotations

from albert.stage import stage_main
from model.pretrain.build import (
    build_model,
    build_training,
    build_training_optimizer,
    load_initial_weights,
    restore,
    weights_digest,
)
from model.pretrain.config import PRECISION_POLICIES, PretrainConfig
from model.pretrain.divergence import diverged, weights_finite
from model.pretrain.export import export_model
from model.pretrain.identity import (
    IDENTITY_FIELDS,
    IncompatibleOutputError,
    check_output,
    data_digest,
    data_spec,
    resolve_vocab,
    resumable_checkpoint,
    training_identity,
)
from model.pretrain.jax_step import JaxState, JaxTraining, jax_train_step
from model.pretrain.loop import run
from model.pretrain.run_log import MetricsLog, RunLog
from model.pretrain.tf_step import TfTraining, tf_train_step
from model.runtime.distribute import leave_jax_cluster, meet_other_processes

__all__ = [
    "IDENTITY_FIELDS",
    "PRECISION_POLICIES",
    "IncompatibleOutputError",
    "JaxState",
    "JaxTraining",
    "MetricsLog",
    "PretrainConfig",
    "RunLog",
    "TfTraining",
    "build_model",
    "build_training",
    "build_training_optimizer",
    "check_output",
    "data_digest",
    "data_spec",
    "diverged",
    "export_model",
    "jax_train_step",
    "load_initial_weights",
    "main",
    "meet_other_processes",
    "resolve_vocab",
    "restore",
    "resumable_checkpoint",
    "run",
    "tf_train_step",
    "training_identity",
    "weights_digest",
    "weights_finite",
]


def main(argv=None, prog="python -m model.pretrain") -> int:
    return leave_jax_cluster(stage_main(PretrainConfig, run, argv, prog=prog, description=__doc__))
