"""The distribution strategy follows the hardware.

TensorFlow backend: TPUStrategy when a TPU is named, MultiWorkerMirroredStrategy when TF_CONFIG
describes a cluster of several tasks, MirroredStrategy over several GPUs, the default strategy
otherwise (CPU, one GPU). JAX backend: `keras.distribution.DataParallel` over all devices of all
processes when there are several, nothing otherwise; several processes (hosts) join through JAX's
own runtime (`jax.distributed`, see `join_jax_cluster`), as the flags, TF_CONFIG or JAX's cluster
detection describe them (`jax_cluster`).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import sys
import threading
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from albert.errors import EXIT_INTERRUPTED, StageError

logger = logging.getLogger(__name__)

# Environment variables by which JAX's cluster detection recognises a multi-process job it can join
# without flags: SLURM, Open MPI, Cloud TPU on GKE (and multislice), or JAX's own.
JAX_CLUSTER_VARIABLES = (
    "SLURM_JOB_ID",
    "OMPI_MCA_orte_hnp_uri",
    "TPU_WORKER_HOSTNAMES",
    "MEGASCALE_COORDINATOR_ADDRESS",
    "JAX_COORDINATOR_ADDRESS",
)
HEARTBEAT_TIMEOUT_SECONDS = 20  # the default: a process silent this long is dead; the others stop
JOIN_TIMEOUT_SECONDS = 300  # how long a process waits for all the others to join (or to finish)
EXIT_GRACE_SECONDS = 1.0  # process 0 keeps the coordination service up while the others exit


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
    import tensorflow as tf  # heavy, backend-specific: only the TensorFlow backend needs it

    name = strategy_name(tpu, len(tf.config.list_physical_devices("GPU")))
    if name == "tpu":
        resolver = tf.distribute.cluster_resolver.TPUClusterResolver(
            tpu="" if tpu == "local" else tpu
        )
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
    """True on the task that writes checkpoints, metrics and exports (always outside a cluster):
    process 0 of a multi-process JAX job, else the chief (or worker 0) TF_CONFIG names."""
    index, count = jax_process()
    if count > 1:
        return index == 0
    raw = os.environ.get("TF_CONFIG")
    if not raw or cluster_size(raw) <= 1:
        return True
    task = json.loads(raw).get("task", {})
    cluster = json.loads(raw).get("cluster", {})
    if "chief" in cluster:
        return task.get("type") == "chief"
    return task.get("type") == "worker" and int(task.get("index", 0)) == 0


def jax_data_parallel():
    """`keras.distribution.DataParallel` over all JAX devices (of every process); None with one."""
    import jax  # heavy: the flows import this module without loading JAX or Keras
    import keras  # heavy: loads the backend

    devices = jax.devices()
    if len(devices) <= 1:
        return None
    logger.info(
        "distribution: keras DataParallel over %d %s devices in %d processes",
        len(devices),
        devices[0].platform,
        jax.process_count(),
    )
    return keras.distribution.DataParallel(devices=devices)


@dataclass(frozen=True)
class JaxCluster:
    """How this process joins a multi-process JAX job: the flags (all three) or JAX's detection."""

    coordinator: str | None = None
    num_processes: int | None = None
    process_id: int | None = None

    def describe(self) -> str:
        if self.coordinator is None:
            return "the cluster JAX detected"
        return f"{self.coordinator} as process {self.process_id} of {self.num_processes}"


def jax_cluster(
    coordinator: str | None,
    num_processes: int | None,
    process_id: int | None,
    environ: Mapping[str, str] = os.environ,
) -> JaxCluster | None:
    """The multi-process job the flags (or, with none, the environment) describe; None: one process.

    StageError (one line) when the flags are incomplete or the process id is out of range.
    """
    given = {
        "--coordinator": coordinator,
        "--num-processes": num_processes,
        "--process-id": process_id,
    }
    if all(value is None for value in given.values()):
        if cluster_size(environ.get("TF_CONFIG", "")) > 1:  # Vertex AI, Kubeflow: tasks in order
            return jax_cluster_from_tf_config(environ["TF_CONFIG"])
        detected = any(name in environ for name in JAX_CLUSTER_VARIABLES)
        return JaxCluster() if detected else None
    missing = [flag for flag, value in given.items() if value is None]
    if missing:
        raise StageError(
            f"{', '.join(missing)} missing: several processes need "
            f"--coordinator HOST:PORT, --num-processes N and --process-id I together"
        )
    host, _, port = coordinator.rpartition(":")
    if not host or not port.isdigit():
        raise StageError(f"--coordinator {coordinator}: expected HOST:PORT")
    if not 0 <= process_id < num_processes:
        raise StageError(
            f"--process-id {process_id} is out of range for --num-processes "
            f"{num_processes} (0 to {num_processes - 1})"
        )
    return JaxCluster(coordinator, num_processes, process_id)


def jax_cluster_from_tf_config(tf_config: str) -> JaxCluster:
    """TF_CONFIG's cluster as JAX processes: the chief (else worker 0) is process 0 and the
    coordinator at its address, the workers follow in order."""
    spec = json.loads(tf_config)
    tasks = [
        (kind, index, address)
        for kind in ("chief", "worker")
        for index, address in enumerate(spec.get("cluster", {}).get(kind, []))
    ]
    task = spec.get("task", {})
    this = (task.get("type"), int(task.get("index", 0)))
    rank = [(kind, index) for kind, index, _ in tasks].index(this)
    return JaxCluster(tasks[0][2], len(tasks), rank)


def join_jax_cluster(cluster: JaxCluster, heartbeat_timeout: int) -> None:
    """`jax.distributed.initialize` (before anything touches a device), CPU collectives over gloo,
    a heartbeat after which (`heartbeat_timeout` seconds) a silent process counts as dead, no
    abort of the others when one dies; StageError (one line) when joining fails or the job's
    process count is not --num-processes."""
    import jax  # heavy: the flows import this module without loading JAX

    if jax.distributed.is_initialized():
        return
    jax.config.update("jax_cpu_collectives_implementation", "gloo")
    # a dead process is not propagated as a fatal error that aborts the others: each names it itself
    # (naming_failed_processes) and stops
    jax.config.update("jax_enable_recoverability", True)
    try:
        jax.distributed.initialize(
            cluster.coordinator,
            cluster.num_processes,
            cluster.process_id,
            initialization_timeout=JOIN_TIMEOUT_SECONDS,
            heartbeat_timeout_seconds=heartbeat_timeout,
        )
    except (RuntimeError, ValueError) as error:
        reason = str(error).strip().splitlines()[0]
        raise StageError(f"could not join {cluster.describe()}: {reason}") from None
    if cluster.num_processes is not None and jax.process_count() != cluster.num_processes:
        raise StageError(
            f"--num-processes {cluster.num_processes}, but the job at "
            f"{cluster.coordinator} has {jax.process_count()} processes"
        )
    logger.info("process %d of %d joined the JAX cluster", jax.process_index(), jax.process_count())


def jax_process() -> tuple[int, int]:
    """(this process's index, the number of processes) of the JAX job; (0, 1) without one."""
    jax = sys.modules.get("jax")  # not imported: no JAX job (and none is started here)
    if jax is None or not jax.distributed.is_initialized():
        return 0, 1
    return jax.process_index(), jax.process_count()


@contextlib.contextmanager
def naming_failed_processes(heartbeat_timeout: int) -> Iterator[None]:
    """In a multi-process JAX job, an error raised while another process has died (a collective that
    lost its peer) becomes StageError naming that process; any other error is raised as it is.
    `heartbeat_timeout`: the job's (`join_jax_cluster`)."""
    try:
        yield
    except StageError:
        raise
    except Exception as error:
        index, count = jax_process()
        live = live_processes(count, heartbeat_timeout) if count > 1 else None
        failed = [i for i in range(count) if live is not None and i not in live]
        if not failed:
            raise
        raise StageError(
            f"process {', '.join(map(str, failed))} of the {count} stopped; process {index} stops "
            f"too (re-run the same commands to resume from the last checkpoint)"
        ) from error


def live_processes(count: int, heartbeat_timeout: int) -> list[int] | None:
    """The processes JAX's coordination service counts alive: it answers once every live process
    has asked or been declared dead by its heartbeat. None when no answer comes within twice the
    job's heartbeat timeout (the others alive and busy elsewhere); without a coordinator, all but
    0."""
    from jax._src import distributed  # heavy; the coordination client: no public API for it

    answer: dict[str, list[int]] = {}

    def ask() -> None:
        try:
            live = distributed.global_state.client.get_live_nodes(list(range(count)))
            answer["live"] = list(live)
        except Exception:  # noqa: BLE001  (the coordinator, process 0, is gone)
            answer["live"] = list(range(1, count))

    asking = threading.Thread(target=ask, daemon=True)
    asking.start()
    asking.join(2 * heartbeat_timeout)
    return answer.get("live")


def meet_other_processes() -> bool:
    """In a multi-process JAX job, wait (bounded) until every process has finished training; False,
    with one logged line, if they did not come. Process 0 calls it when its training is done (also
    a flow's, which goes on to evaluate) so that the other processes may leave
    (`leave_jax_cluster`)."""
    index, count = jax_process()
    if count == 1:
        return True
    from jax._src import distributed  # heavy; the client's barrier: no public API for it

    try:
        distributed.global_state.client.wait_at_barrier(
            "model.pretrain-finished", JOIN_TIMEOUT_SECONDS * 1000
        )
    except Exception as error:  # noqa: BLE001  (one line; the caller's exit code says it failed)
        logger.error(
            "process %d: the other processes did not finish: %s", index, str(error).splitlines()[0]
        )
        return False
    return True


def leave_jax_cluster(exit_code: int, *, process_0_met: bool = False) -> int:
    """After the run, in a multi-process job: a failed process exits at once (`os._exit`: JAX's
    shutdown would contact processes that are gone). On success, and when every process stopped for
    a signal at the step they agreed on (EXIT_INTERRUPTED), all processes meet at a barrier, so that
    all exit with the same code once process 0 has saved; the others then exit at once and process
    0, which hosts JAX's coordination service, a moment later (a process still connected when the
    service goes is aborted by JAX's client). With `process_0_met` (a flow: its pretrain stage met
    the others when training ended), process 0 returns at once on success."""
    index, count = jax_process()
    if count == 1 or (exit_code == 0 and index == 0 and process_0_met):
        return exit_code
    if exit_code in (0, EXIT_INTERRUPTED):
        if not meet_other_processes():
            exit_code = exit_code or 1
        elif index == 0:
            time.sleep(EXIT_GRACE_SECONDS)
            return exit_code
    sys.stdout.flush()
    logging.shutdown()
    os._exit(exit_code)
