"""The device prefetch's overlap, measured by the trainer's own counters: `model.pretrain.Trainer`
driven by a step of known duration on batches of known cost, with and without
`model.input.prefetch.DevicePrefetch` (the JAX engine's, two batches ahead, `jax.device_put`).

    python -m benchmarks.prefetch [--steps 120] [--step-ms 40] [--input-ms 20] [--batch 32]
                                  [--seq 128] [--kinds sleep,jax] [--repeats 3]

The step: `sleep` (the host waits while a device would compute: what a GPU step is to the loop) or
`jax` (a jitted chain of matmuls on this CPU, calibrated to --step-ms alone: it shares the cores
with the input). The input: a generator whose batches (random ids and mask, as a dynamic-masking
batch holds) each cost --input-ms of NumPy work in the training process (the CPU default of 0
workers), calibrated alone. Prints one JSON line per (kind, prefetch): the trainer's
`input_wait_share`, its steady steps/s against the step's own rate timed alone
(`synthetic_steps_per_s`), their ratio (the goal on a device: >= 0.97 with a wait <= 0.02) and
its bound from the input's cost timed in that run (`input_ms_measured`): without prefetch the loop
pays step + input a step, 1 / (step + input); with it max(step, input), where the two overlap; the
CPU's model and load; of --repeats runs of each (interleaved), the median's line with every run's
ratio and wait beside it.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time

import numpy as np

from benchmarks.helpers.machine import cpu_model


def calibrated_input(batch: int, seq: int, seconds: float):
    """`make(rng)` -> a batch costing about `seconds` of NumPy work: a row at a time (as the masker
    draws per record), sorting `n` randoms a row, `n` calibrated here alone."""

    def make(rng, n):
        ids = rng.integers(5, 30000, (batch, seq), dtype=np.int32)
        mask = np.ones((batch, seq), np.int32)
        for row in range(batch):  # the batch's CPU work: masking draws, permutations
            keys = np.sort(rng.random(n))
            mask[row, seq - int(keys[0] * seq / 2) :] = 0
        return {"input_ids": ids, "input_mask": mask}

    rng, n = np.random.default_rng(0), 4_000
    start = time.perf_counter()
    for _ in range(5):
        make(rng, n)
    n = max(10, int(n * seconds / ((time.perf_counter() - start) / 5)))
    return lambda rng: make(rng, n)


def batches(make, steps: int):
    rng = np.random.default_rng(1)
    for index in range(steps):
        yield index // 50, index % 50, make(rng)


class SyntheticEngine:
    """The engine the trainer drives: `step` places its batch unless `Placed`, then runs the step
    of `seconds` (`kind`: sleep, or a jitted matmul chain calibrated to it)."""

    def __init__(self, kind: str, seconds: float):
        import jax
        import jax.numpy as jnp

        self.kind, self.seconds, self.place = kind, seconds, jax.device_put
        if kind == "jax":
            weight = jnp.eye(256, dtype=jnp.float32) * 0.5

            @jax.jit
            def chain(x, n):
                return jax.lax.fori_loop(0, n, lambda _, y: jnp.tanh(y @ weight), x).sum()

            self.chain, self.x = chain, jnp.ones((256, 256), jnp.float32)
            self.n = 50
            chain(self.x, self.n).block_until_ready()
            start = time.perf_counter()
            chain(self.x, self.n).block_until_ready()
            self.n = max(1, int(self.n * seconds / (time.perf_counter() - start)))

    def step(self, batch):
        from model.input.prefetch import Placed

        arrays = batch.arrays if isinstance(batch, Placed) else self.place(batch)
        if self.kind == "sleep":
            time.sleep(self.seconds)
        else:
            float(self.chain(self.x + arrays["input_mask"][0, 0], self.n))
        return np.ones(6)

    def compilations(self) -> int:
        return 1

    def alone(self, steps: int) -> float:
        """The step's own rate (steps/s), its batch placed once."""
        from model.input.prefetch import Placed

        batch = Placed(self.place({"input_mask": np.ones((2, 2), np.int32)}), 0, 0)
        start = time.perf_counter()
        for _ in range(steps):
            self.step(batch)
        return steps / (time.perf_counter() - start)


class _Log:
    def __init__(self):
        self.records = []

    def record(self, record):
        self.records.append(record)

    def progress(self, *args):
        pass

    def __len__(self):
        return len(self.records)


def measure(kind: str, prefetch: bool, args, make) -> dict:
    from model.checkpoints.manager import Checkpoints
    from model.input.prefetch import DevicePrefetch
    from model.pretrain.config import PretrainConfig
    from model.pretrain.time_budget import TrainingClock
    from model.pretrain.trainer import Trainer
    from model.runtime.preemption import StopRequest

    engine = SyntheticEngine(kind, args.step_ms / 1000)
    synthetic = engine.alone(max(10, args.steps // 4))
    rng, start = np.random.default_rng(2), time.perf_counter()
    for _ in range(10):
        make(rng)
    input_seconds = (time.perf_counter() - start) / 10  # under this run's load
    with tempfile.TemporaryDirectory() as work:
        config = PretrainConfig(
            data=work, output=work, steps=args.steps, batch_size=args.batch, eval_every=0,
            log_every=args.steps, checkpoint_every=10 * args.steps, progress=False,
        )  # fmt: skip
        checkpoints = Checkpoints(work, config.checkpoint_every, 1, True, StopRequest.never())
        state = {"step": 0, "epoch": 0, "batch_in_epoch": 0}
        trainer = Trainer(
            config, None, None, None, lambda step: 0.1, engine, _Log(), {}, True, state,
            TrainingClock(), checkpoints,
        )  # fmt: skip
        source = batches(make, args.steps + 4)
        if prefetch:
            with DevicePrefetch(source, engine.place) as placed:
                trainer.train(placed)
        else:
            trainer.train(source)
    figures = trainer.loop_figures
    loop = figures["steady_sequences_per_second"] / args.batch
    return {
        "benchmark": "prefetch",
        "step": kind,
        "prefetch": prefetch,
        "step_ms": args.step_ms,
        "input_ms": args.input_ms,
        "steps": args.steps,
        "synthetic_steps_per_s": round(synthetic, 2),
        "loop_steps_per_s": round(loop, 2),
        "loop_over_synthetic": round(loop / synthetic, 3),
        "input_wait_share": figures["input_wait_share"],
        "input_ms_measured": round(1000 * input_seconds, 1),
        # the loop's bound against the step: 1/(step + input) without overlap, 1/max(...) with it
        "bound": round(min(1.0, (1 / synthetic) / max(1 / synthetic, input_seconds)), 3)
        if prefetch
        else round((1 / synthetic) / (1 / synthetic + input_seconds), 3),
        "cpu": cpu_model(),
        "cores": os.cpu_count(),
        "load": [round(x, 2) for x in os.getloadavg()],
    }


def main() -> int:
    os.environ.setdefault("KERAS_BACKEND", "jax")
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=120)
    parser.add_argument("--step-ms", type=float, default=40.0)
    parser.add_argument("--input-ms", type=float, default=20.0)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--seq", type=int, default=128)
    parser.add_argument("--kinds", default="sleep,jax")
    parser.add_argument("--repeats", type=int, default=3, help="runs of each, interleaved")
    args = parser.parse_args()
    make = calibrated_input(args.batch, args.seq, args.input_ms / 1000)
    for kind in args.kinds.split(","):
        runs = {False: [], True: []}
        for _ in range(args.repeats):
            for prefetch in (False, True):
                runs[prefetch].append(measure(kind, prefetch, args, make))
        for prefetch, measured in runs.items():
            print(json.dumps(median_run(measured)), flush=True)
    return 0


def median_run(runs: list[dict]) -> dict:
    """The run of median loop/synthetic ratio, with every run's ratio and wait beside it (a shared
    machine's load moves single runs)."""
    ranked = sorted(runs, key=lambda run: run["loop_over_synthetic"])
    return {
        **ranked[len(ranked) // 2],
        "runs_loop_over_synthetic": [run["loop_over_synthetic"] for run in runs],
        "runs_input_wait_share": [run["input_wait_share"] for run in runs],
    }


if __name__ == "__main__":
    raise SystemExit(main())
