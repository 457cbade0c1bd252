"""The distribution strategy follows the hardware.

TensorFlow backend: TPUStrategy when a TPU is named, MultiWorkerMirroredStrategy when TF_CONFIG
describes a cluster of several tasks, MirroredStrategy over several GPUs, the default strategy
otherwise (CPU, one GPU). JAX backend: `keras.distribution.DataParallel` over the local devices when
there are several, nothing otherwise.
"""

from __future__ import annotations

import json
import logging
import os

logger = logging.getLogger(__name__)


def cluster_size(tf_config: str | None = None) -> int:
    """Number of tasks (chief + workers) TF_CONFIG describes; 0 without TF_CONFIG."""
    raw = os.environ.get("TF_CONFIG") if tf_config is None else tf_config
    if not raw:
        return 0
    cluster = json.loads(raw).get("cluster", {})
    return sum(len(cluster.get(kind, [])) for kind in ("chief", "worker"))


def strategy_name(tpu: str | None, num_gpus: int, tf_config: str | None = None) -> str:
    """Which strategy the hardware calls for: 'tpu', 'multi_worker', 'mirrored' or 'default'."""
    if tpu:
        return "tpu"
    if cluster_size(tf_config) > 1:
        return "multi_worker"
    if num_gpus > 1:
        return "mirrored"
    return "default"


def select_strategy(tpu: str | None = None):
    """A tf.distribute strategy for the TensorFlow backend (see `strategy_name`)."""
    import tensorflow as tf

    name = strategy_name(tpu, len(tf.config.list_physical_devices("GPU")))
    if name == "tpu":
        resolver = tf.distribute.cluster_resolver.TPUClusterResolver(tpu="" if tpu == "local" else tpu)
        tf.config.experimental_connect_to_cluster(resolver)
        tf.tpu.experimental.initialize_tpu_system(resolver)
        strategy = tf.distribute.TPUStrategy(resolver)
    elif name == "multi_worker":
        strategy = tf.distribute.MultiWorkerMirroredStrategy()
    elif name == "mirrored":
        strategy = tf.distribute.MirroredStrategy()
    else:
        strategy = tf.distribute.get_strategy()
    logger.info("distribution: %s (%d replicas)", name, strategy.num_replicas_in_sync)
    return strategy


def is_chief(strategy=None) -> bool:
    """True on the task that writes checkpoints, metrics and exports (always outside a cluster)."""
    raw = os.environ.get("TF_CONFIG")
    if not raw or cluster_size(raw) <= 1:
        return True
    task = json.loads(raw).get("task", {})
    cluster = json.loads(raw).get("cluster", {})
    if "chief" in cluster:
        return task.get("type") == "chief"
    return task.get("type") == "worker" and int(task.get("index", 0)) == 0


def jax_data_parallel():
    """`keras.distribution.DataParallel` over the local JAX devices, or None with a single device."""
    import jax
    import keras

    devices = jax.local_devices()
    if len(devices) <= 1:
        return None
    logger.info("distribution: keras DataParallel over %d %s devices", len(devices), devices[0].platform)
    return keras.distribution.DataParallel(devices=devices)
