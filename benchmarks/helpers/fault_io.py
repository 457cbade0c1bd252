"""The I/O-error and stored-record faults of benchmarks/faults.py: an object-store filesystem that
fails its Nth call during a checkpoint, a metrics record and an export commit; mutated cached task
results read through the flows' result storage."""

from __future__ import annotations

import contextlib
import errno
import json
import os
import sys
import time
from pathlib import Path

import fsspec
import numpy as np
from fsspec.implementations.memory import MemoryFileSystem

from albert.outputs import atomic_output_dir, remove_leftovers, write_atomic

ROOT = Path(__file__).resolve().parents[2]
BOOKS = ROOT.parent / "shared" / "data" / "books"


def io_error_scenarios(work: Path) -> list[dict]:
    """An object-store filesystem failing its Nth call, for every N over a checkpoint save, a
    metrics record and an export commit."""
    import keras  # heavy: TensorFlow/JAX, only this scenario needs it

    from model.checkpoints import store as checkpointing  # heavy: Keras
    from model.pretrain import MetricsLog  # heavy: Keras

    class FlakyFileSystem(MemoryFileSystem):
        protocol = "flaky"
        calls, fail_at = 0, -1

        @classmethod
        def _strip_protocol(cls, path):
            return MemoryFileSystem._strip_protocol(path.removeprefix("flaky://"))

        @classmethod
        def _tick(cls):
            cls.calls += 1
            if cls.calls == cls.fail_at:
                raise OSError(errno.EIO, "injected I/O error")

    for method in (
        "_open",
        "pipe_file",
        "cat_file",
        "mv",
        "rm",
        "exists",
        "info",
        "ls",
        "makedirs",
        "glob",
        "find",
        "copy",
    ):
        original = getattr(MemoryFileSystem, method)

        def wrapped(self, *args, _original=original, **kwargs):
            type(self)._tick()
            return _original(self, *args, **kwargs)

        setattr(FlakyFileSystem, method, wrapped)
    fsspec.register_implementation("flaky", FlakyFileSystem, clobber=True)

    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(3, name="dense")])
    optimizer = keras.optimizers.Adam()
    optimizer.build(model.trainable_variables)

    def operations(root: str, step: int) -> None:
        """What a training run does at a checkpoint (and at its start: clear leftovers of a
        failed attempt)."""
        remove_leftovers(f"{root}/checkpoints/ckpt-*")
        checkpointing.save_checkpoint(
            f"{root}/checkpoints", step, model, optimizer, {"epoch": 0}, keep=2
        )
        MetricsLog(f"{root}/metrics.jsonl", kept=step - 1).append({"step": step, "split": "train"})
        with atomic_output_dir(f"{root}/export", keep_previous=False) as temp:
            write_atomic(f"{temp}/model.bin", np.full(1000, step, np.int32).tobytes())

    FlakyFileSystem.fail_at = -1
    FlakyFileSystem.calls = 0
    operations("flaky://probe", 1)
    total_calls = FlakyFileSystem.calls
    results = []
    for n in range(1, total_calls + 1):
        root = f"flaky://run-{n}"
        FlakyFileSystem.fail_at = -1
        operations(root, 1)  # finished work before the fault
        finished = {
            p: FlakyFileSystem.store[p].getvalue()
            for p in FlakyFileSystem.store
            if p.startswith(f"/run-{n}/")
        }
        FlakyFileSystem.calls, FlakyFileSystem.fail_at = 0, n
        try:
            operations(root, 2)
            failed = False
        except OSError:
            failed = True
        FlakyFileSystem.fail_at = -1
        visible_export = {p for p in FlakyFileSystem.store if p.startswith(f"/run-{n}/export/")}
        mid_checks = {"export_whole": visible_export in (set(), {f"/run-{n}/export/model.bin"})}
        lost = sum(
            len(v)
            for p, v in finished.items()
            if "/checkpoints/ckpt-000000001/" in p
            and p not in FlakyFileSystem.store
            and not any("ckpt-000000002/" in q for q in FlakyFileSystem.store)
        )
        operations(root, 2)  # the task's retry
        store = FlakyFileSystem.store
        lines = store[f"/run-{n}/metrics.jsonl"].getvalue().decode().splitlines()
        checks = {
            **mid_checks,
            "retry_succeeded": checkpointing.latest_checkpoint(f"{root}/checkpoints").step == 2,
            "records_complete": [json.loads(line)["step"] for line in lines] == [1, 2],
            "export_is_new": store[f"/run-{n}/export/model.bin"].getvalue()
            == np.full(1000, 2, np.int32).tobytes(),
            "no_leftovers": not [
                p
                for p in store
                if p.startswith(f"/run-{n}")
                and (".tmp-" in p or ".old-" in p or p.endswith(".lock"))
            ],
        }
        results.append(
            {
                "stage": "io_error",
                "failing_call": n,
                "failed": failed,
                "checks": checks,
                "survived": all(checks.values()),
                "bytes_lost": lost,
            }
        )
    return results


def record_fuzz(work: Path, examples: int, seed: int) -> dict:
    """Run the segment stage once as a real cached flow task, then read `examples` mutations of its
    result record through the flows' result storage (`record_mutations.fuzz_reads`)."""
    os.environ.update(
        {
            "PREFECT_HOME": str(work / "prefect-home"),
            "PREFECT_LOGGING_LEVEL": "WARNING",  # set before Prefect is first imported
            "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "90",
            "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
        }
    )
    # Prefect reads the PREFECT_* variables above when it is first imported, here
    from prefect import flow  # heavy: Prefect, after its settings
    from prefect.testing.utilities import prefect_test_harness  # heavy: Prefect

    from flows.engine import tasks  # heavy: Prefect
    from flows.engine.result_storage import JsonOnlyLocalFileSystem  # heavy: Prefect
    from pipelines.segment.stage import SegmentConfig  # heavy: Beam
    from tests.record_mutations import fuzz_reads  # heavy: Prefect, Hypothesis

    root = work / "records"
    config = SegmentConfig(
        input=[str(BOOKS / "blake-poems.txt")],
        output=str(root / "segment"),
        format="text",
        num_shards=1,
    )

    @flow
    def segment_once() -> None:
        tasks.run_stage(
            tasks.segment,
            config,
            index=1,
            total=1,
            result_storage=root / ".prefect",
        )

    with prefect_test_harness(server_startup_timeout=90), contextlib.redirect_stdout(sys.stderr):
        segment_once()  # its banners go to stderr: stdout is the one JSON line
    key = tasks.task_cache_key(tasks.segment, config)
    genuine, marker = (root / ".prefect" / key).read_bytes(), root / "pwned"
    (root / "fuzz").mkdir()
    storage = JsonOnlyLocalFileSystem(basepath=str(root / "fuzz"))
    begin = time.monotonic()
    try:
        outcomes, error = dict(fuzz_reads(storage, key, genuine, marker, examples, seed)), None
    except Exception as failure:  # noqa: BLE001  (reported in the JSON line, with the example)
        outcomes, error = {}, f"{type(failure).__name__}: {failure}"[:2000]
    checks = {"no_code_ran": not marker.exists(), "every_read_refused_or_plain": error is None}
    return {
        "stage": "records",
        "examples": examples,
        "outcomes": outcomes,
        "record_bytes": len(genuine),
        "seconds": round(time.monotonic() - begin, 1),
        "checks": checks,
        "survived": all(checks.values()),
        "error": error,
        "bytes_lost": 0,
    }
