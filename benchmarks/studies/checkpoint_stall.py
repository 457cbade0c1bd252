"""The stall a checkpoint save costs the training step: synchronous (the whole save on the training
thread, as before issue 38) against asynchronous (`model.checkpoints.writer`: the snapshot on the
training thread, the write and commit in a background thread while training goes on), side by side
in one process, at albert-base and albert-large sizes.

For each preset the model and LAMB are built and trained a few real steps (the trainer's own step
function, on random batches); then each save is done as `Trainer.save` does it on the training
thread (the backend's weights brought into the Keras variables and checked finite, then):

- `step_s`: the median step time, for scale;
- `sync_stall_s`: `checkpointing.save_checkpoint` (snapshot, serialise, write, commit), which the
  training step waits for whole;
- `async_stall_s`: `checkpointing.snapshot` + `CheckpointWriter.submit`, what the training thread
  waits for now;
- `write_s` and `write_cpu_s`: the background write's wall time and the CPU time its thread used:
  what it can take from training at most, when training uses every core (CPU training); on an
  accelerator host with a core to spare, nothing.

Best of `--repeats` for each. Prints ONE JSON line with the CPU model and load.

    python -m benchmarks.studies.checkpoint_stall [--presets albert-base,albert-large] [--batch 8]
        [--seq 128] [--repeats 3] [--output DIR]   (KERAS_BACKEND picks the backend)
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import statistics
import tempfile
import time
from pathlib import Path

from albert.fs import join
from benchmarks.helpers.machine import cpu_model
from benchmarks.pretrain import make_batch
from model.checkpoints import store as checkpointing
from model.checkpoints.writer import CheckpointWriter
from model.pretrain.divergence import weights_finite

VOCAB = 30000


def training(preset: str, batch: int, seq: int):
    """(a function running one real training step, one bringing the weights into the Keras
    variables as a save does, the model, the optimizer)."""
    import keras
    import numpy as np

    from model.pretrain import PretrainConfig, build_model, build_training_optimizer
    from model.pretrain.loop import select_devices, training_engine

    config = PretrainConfig(
        data="-", output="-", preset=preset, batch_size=batch, warmup_steps=0, jit_compile=False
    )
    backend = keras.config.backend()
    strategy, distribution, replicas = select_devices(config, backend)
    model = build_model(config, VOCAB)
    optimizer, _ = build_training_optimizer(config)
    optimizer.build(model.trainable_variables)
    engine = training_engine(config, backend, model, optimizer, strategy, distribution, replicas)
    data = make_batch(batch, seq, VOCAB)
    if backend == "tensorflow":
        import tensorflow as tf

        data = {k: tf.constant(v) for k, v in data.items()}

    def step():  # the sums are fetched every step, as the trainer does
        np.asarray(engine.step(data))

    def sync():
        engine.sync()
        assert weights_finite(model)

    return step, sync, model, optimizer


def timed(function) -> float:
    start = time.perf_counter()
    function()
    return time.perf_counter() - start


def measure(preset: str, args, directory: str) -> dict:
    step, sync_weights, model, optimizer = training(preset, args.batch, args.seq)
    for _ in range(2):
        step()
    step_s = statistics.median(timed(step) for _ in range(3))
    state = {"epoch": 0, "batch_in_epoch": 0}
    write, writes = checkpointing.write_checkpoint, []

    def timed_write(*args):  # in the writer's thread: its wall and CPU time
        start, cpu = time.perf_counter(), time.thread_time()
        path = write(*args)
        writes.append((time.perf_counter() - start, time.thread_time() - cpu))
        return path

    sync, blocking = [], []
    for repeat in range(args.repeats):
        save = functools.partial(
            checkpointing.save_checkpoint, directory, 2 * repeat + 1, model, optimizer, state, 2
        )
        sync.append(timed(lambda save=save: (sync_weights(), save())))
        checkpointing.write_checkpoint = timed_write
        with CheckpointWriter() as writer:
            start = time.perf_counter()
            sync_weights()
            writer.submit(
                directory, 2 * repeat + 2, checkpointing.snapshot(model, optimizer), state, keep=2
            )
            blocking.append(time.perf_counter() - start)
            step()  # training goes on while the write runs
        checkpointing.write_checkpoint = write
    newest = checkpointing.latest_checkpoint(directory)
    size = sum(f.stat().st_size for f in Path(newest.path).iterdir())
    return {
        "preset": preset,
        "checkpoint_mb": round(size / 2**20, 1),
        "step_s": round(step_s, 3),
        "sync_stall_s": round(min(sync), 3),
        "async_stall_s": round(min(blocking), 3),
        "stall_ratio_async_to_sync": round(min(blocking) / min(sync), 3),
        "write_s": round(min(wall for wall, _ in writes), 3),
        "write_cpu_s": round(min(cpu for _, cpu in writes), 3),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--presets", default="albert-base,albert-large")
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--seq", type=int, default=128)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--output", help="where the checkpoints go (default: a temporary folder)")
    args = parser.parse_args()
    import keras

    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="checkpoint-stall-") as scratch:
        rows = [
            measure(preset, args, join(args.output or scratch, preset))
            for preset in args.presets.split(",")
        ]
    print(
        json.dumps(
            {
                "benchmark": "checkpoint_stall",
                "cpu": cpu_model(),
                "cpus": os.cpu_count(),
                "load_before": round(load_before, 2),
                "load_after": round(os.getloadavg()[0], 2),
                "backend": keras.config.backend(),
                "batch": args.batch,
                "seq": args.seq,
                "rows": rows,
            }
        ),
        flush=True,
    )


if __name__ == "__main__":
    main()
