"""What it costs several JAX processes to agree, every step, whether to stop for a signal: JAX's
preemption sync point (`multihost_utils.reached_preemption_sync_point`, what
`model.runtime.preemption` asks) against an allgather of a "stop requested" flag
(`multihost_utils.process_allgather`), and a read of a key in JAX's coordination service, side by
side in the same processes.

Starts `--processes` JAX processes on 127.0.0.1 (CPU, gloo collectives, as the tests do); each
times `--calls` calls of each after a warm-up. Prints ONE JSON line (process 0's figures, seconds
per call) with the CPU model and load.

    python -m benchmarks.studies.stop_agreement [--processes 2] [--calls 300]
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import time

from benchmarks.helpers.machine import cpu_model


def worker(coordinator: str, processes: int, index: int, calls: int) -> None:
    import jax
    import numpy as np

    jax.config.update("jax_cpu_collectives_implementation", "gloo")
    jax.distributed.initialize(coordinator, processes, index)
    from jax._src import distributed
    from jax.experimental import multihost_utils

    client = distributed.global_state.client
    if index == 0:
        client.key_value_set("stop", "0")
    multihost_utils.sync_global_devices("ready")

    def per_call(function) -> float:
        for _ in range(20):
            function()
        start = time.perf_counter()
        for _ in range(calls):
            function()
        return (time.perf_counter() - start) / calls

    steps = iter(range(1, 10**9))
    figures = {
        "sync_point_s": per_call(
            lambda: multihost_utils.reached_preemption_sync_point(next(steps))
        ),
        "allgather_s": per_call(lambda: multihost_utils.process_allgather(np.zeros(1, np.int32))),
        "key_value_read_s": per_call(lambda: client.key_value_try_get("stop")),
    }
    multihost_utils.sync_global_devices("done")
    if index == 0:
        print("FIGURES " + json.dumps(figures), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--processes", type=int, default=2)
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--worker", nargs=2, type=int, help=argparse.SUPPRESS)
    parser.add_argument("--coordinator", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args.coordinator, args.worker[0], args.worker[1], args.calls)
        return
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        coordinator = f"127.0.0.1:{probe.getsockname()[1]}"
    env = dict(os.environ, JAX_PLATFORMS="cpu")
    load_before = os.getloadavg()[0]
    workers = [
        subprocess.Popen(
            [
                sys.executable,
                "-m",
                "benchmarks.studies.stop_agreement",
                "--coordinator",
                coordinator,
                "--calls",
                str(args.calls),
            ]
            + ["--worker", str(args.processes), str(index)],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        for index in range(args.processes)
    ]
    outputs = [process.communicate(timeout=600)[0] for process in workers]
    figures = json.loads(outputs[0].split("FIGURES ", 1)[1])
    print(
        json.dumps(
            {
                "benchmark": "stop_agreement",
                "cpu": cpu_model(),
                "cpus": os.cpu_count(),
                "load_before": round(load_before, 2),
                "load_after": round(os.getloadavg()[0], 2),
                "processes": args.processes,
                "calls": args.calls,
                **{name: float(f"{value:.3g}") for name, value in figures.items()},
                "allgather_to_sync_point": round(figures["allgather_s"] / figures["sync_point_s"]),
            }
        ),
        flush=True,
    )


if __name__ == "__main__":
    main()
