"""Fault injection: kill stages at seeded random moments, run two writers on one output, fail I/O calls.

Every fault is followed by the same command again, and a fault counts as survived when:
- while the fault was in effect, no partial output was visible as a finished one (a stage's output
  directory was absent or byte-identical to the uninterrupted run's);
- the re-run succeeded, and its output is byte-identical to the uninterrupted run's (data stages), or
  ends with the same weights digest and the same metrics records (pretraining);
- no temporary folder, lock or process of the killed run is left behind.
`bytes_lost` counts finished work lost: bytes of committed outputs and checkpoints present when the
fault struck that the recovery removed without superseding them (goal: 0).

Scenarios (all on the real stages, shared books as the corpus):
- `kill`: SIGKILL `python -m pipelines.segment | vocab | tfrecords | model.pretrain` at a seeded
  random moment of its run (reading, writing and merging shards, a checkpoint write, the export),
  the segment stage also with two Beam worker processes; then the same command again.
- `two_writers`: two pretraining runs started together on one output directory.
- `io_errors`: an fsspec filesystem (object-store semantics) that fails its Nth call, for every N
  over one checkpoint save + metrics record + export commit; then the same operations again.
- `records`: `--records` Hypothesis mutations of a real cached result record (the segment stage's,
  written by a real flow run) read through the flows' result storage and Prefect's own cache check
  (tests/record_mutations.py): each must be refused in one line or read back as plain JSON data,
  and no payload (pickles that touch a marker file, plain, base64 or compressed) may ever run.

    python benchmarks/faults.py [--seed 0] [--kills 2] [--records 20000] [--work DIR]
                                [--only vocab,tfrecords,records]

Prints one JSON line: faults injected, survived, bytes lost, per scenario details, the CPU model.
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import hashlib
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from machine import cpu_model

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))  # record_mutations: the fuzz of the cached-result read path
BOOKS = ROOT.parent / "shared" / "data" / "books"
CORPUS = [
    "austen-persuasion.txt",
    "chesterton-brown.txt",
    "shakespeare-macbeth.txt",
    "blake-poems.txt",
]
TIMING = ("steps_per_second", "sequences_per_second")
ENV = {**os.environ, "PYTHONPATH": str(ROOT), "TF_CPP_MIN_LOG_LEVEL": "3"}


def _comparable(data: bytes, output: Path, name: str) -> bytes:
    """A file's bytes with the output's own path written as OUTPUT and, in JSON stats, the timings
    (`*seconds*`) left out: they differ between the reference and a fault run by nature."""
    data = data.replace(str(output).encode(), b"OUTPUT")
    if not name.endswith(".json"):
        return data

    def strip(value):
        if isinstance(value, dict):
            return {k: strip(v) for k, v in value.items() if "seconds" not in k}
        return [strip(v) for v in value] if isinstance(value, list) else value

    return json.dumps(strip(json.loads(data)), sort_keys=True).encode()


def tree(path: Path) -> dict[str, str]:
    """relative file name -> sha256 of its comparable bytes (everything else byte for byte)."""
    if not path.exists():
        return {}
    return {
        p.relative_to(path).as_posix(): hashlib.sha256(
            _comparable(p.read_bytes(), path, p.name)
        ).hexdigest()
        for p in sorted(path.rglob("*"))
        if p.is_file()
    }


def tree_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) if path.exists() else 0


def leftovers(parent: Path) -> list[str]:
    return sorted(
        str(p.relative_to(parent))
        for p in parent.rglob("*")
        if ".tmp-" in p.name or ".old-" in p.name or p.name.endswith(".lock")
    )


def descendants_alive(pids: set[int]) -> list[int]:
    import psutil

    return [
        pid
        for pid in pids
        if psutil.pid_exists(pid) and psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    ]


def start(command: list[str]) -> subprocess.Popen:
    return subprocess.Popen(
        command, env=ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


def run(command: list[str]) -> tuple[float, dict]:
    begin = time.monotonic()
    process = subprocess.run(command, check=False, env=ENV, capture_output=True, text=True)
    if process.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed: {process.stderr[-2000:]}")
    out = process.stdout
    summary = json.loads(out[out.index("{") :]) if "{" in out else {}
    return time.monotonic() - begin, summary


def stage_commands(work: Path, out: Path) -> dict[str, list[str]]:
    py = [sys.executable, "-m"]
    books = [arg for book in CORPUS for arg in ("--input", str(BOOKS / book))]
    return {
        "segment": py
        + [
            "pipelines.segment",
            *books,
            "--output",
            str(out / "segment"),
            "--format",
            "text",
            "--num-shards",
            "4",
        ],
        "segment-2-workers": py
        + [
            "pipelines.segment",
            *books,
            "--output",
            str(out / "segment-2-workers"),
            "--format",
            "text",
            "--num-shards",
            "4",
            "--direct_running_mode=multi_processing",
            "--direct_num_workers=2",
        ],
        "vocab": py
        + [
            "pipelines.vocab",
            "--input",
            str(work / "ref" / "segment"),
            "--output",
            str(out / "vocab"),
            "--vocab-size",
            "2000",
        ],
        "tfrecords": py
        + [
            "pipelines.tfrecords",
            "--input",
            str(work / "ref" / "segment"),
            "--spm-model",
            str(work / "ref" / "vocab" / "spiece.model"),
            "--output",
            str(out / "tfrecords"),
            "--max-seq-length",
            "64",
            "--num-shards",
            "3",
            "--dupe-factor",
            "1",
        ],
        "pretrain": py
        + [
            "model.pretrain",
            "--data",
            str(work / "ref" / "tfrecords"),
            "--output",
            str(out / "pretrain"),
            "--preset",
            "albert-nano",
            "--steps",
            "40",
            "--batch-size",
            "8",
            "--log-every",
            "2",
            "--checkpoint-every",
            "5",
            "--eval-every",
            "0",
            "--eval-batches",
            "2",
            "--warmup-steps",
            "2",
            "--no-progress",
            "--no-jit-compile",
            "--spm-model",
            str(work / "ref" / "vocab" / "spiece.model"),
        ],
    }


def records(path: Path) -> list[dict]:
    if not path.exists():
        return []
    return [
        {k: v for k, v in json.loads(line).items() if k not in TIMING}
        for line in path.read_text().splitlines()
    ]


def checkpoint_steps(pretrain: Path) -> list[int]:
    return sorted(
        int(p.name.split("-")[1])
        for p in (pretrain / "checkpoints").glob("ckpt-*")
        if p.name[5:].isdigit()
    )


def kill_scenario(
    name: str, command: list[str], output: Path, reference: dict, seconds: float, rng: random.Random
) -> dict:
    """Kill `command` at a random moment, check what is visible, re-run, compare with the reference."""
    import psutil

    finished_before = tree(output) if name != "pretrain" else {}
    ckpts_before = checkpoint_steps(output) if name == "pretrain" else []
    delay = rng.uniform(0.2, 1.0) * seconds
    process = start(command)
    seen: set[int] = set()
    deadline = time.monotonic() + delay
    while time.monotonic() < deadline and process.poll() is None:
        try:
            seen.update(c.pid for c in psutil.Process(process.pid).children(recursive=True))
        except psutil.NoSuchProcess:
            break
        time.sleep(0.2)
    killed = process.poll() is None
    if killed:
        os.kill(process.pid, signal.SIGKILL)
    process.wait()
    checks: dict[str, bool] = {}
    lost = 0
    if name == "pretrain":
        ckpts_after_kill = checkpoint_steps(output)
        lost += sum(
            tree_bytes(output / "checkpoints" / f"ckpt-{s:09d}")
            for s in ckpts_before
            if s > max(ckpts_after_kill or [0])
        )
    else:
        visible = tree(output)
        checks["no_partial_output"] = visible in ({}, reference["tree"], finished_before)
    time.sleep(2.0)  # the watchdog's grace to stop what the killed command started
    watchdogs = [
        p.pid
        for p in psutil.process_iter(["cmdline"])
        if p.info["cmdline"]
        and "albert.reaper" in " ".join(p.info["cmdline"])
        and str(process.pid) in p.info["cmdline"]
    ]
    deadline = time.monotonic() + 15
    while watchdogs and descendants_alive(set(watchdogs)) and time.monotonic() < deadline:
        time.sleep(0.5)
    checks["no_process_left"] = not descendants_alive(seen)
    _, summary = run(command)
    if name == "pretrain":
        checks["same_weights"] = summary.get("weights_sha256") == reference["weights"]
        checks["same_records"] = records(output / "metrics.jsonl") == reference["records"]
        ckpts_after = checkpoint_steps(output)
        lost += sum(
            tree_bytes(output / "checkpoints" / f"ckpt-{s:09d}")
            for s in ckpts_before
            if s > max(ckpts_after or [0])
        )
    else:
        checks["identical_output"] = tree(output) == reference["tree"]
    left = leftovers(output.parent)
    checks["no_leftovers"] = not left
    return {
        "stage": name,
        "killed_after_s": round(delay, 1),
        "killed": killed,
        "checks": checks,
        "survived": all(checks.values()),
        "bytes_lost": lost,
        "leftovers": left,
        "processes_left": descendants_alive(seen),
    }


def two_writers(commands: dict, work: Path, reference: dict) -> dict:
    """Two pretraining runs on one output at once: one fails at once naming the other; nothing corrupted."""
    output = work / "two" / "pretrain"
    command = [
        c if c != str(work / "faults" / "pretrain") else str(output) for c in commands["pretrain"]
    ]
    first, second = start(command), start(command)
    results = [(p.wait(), p.stderr.read()) for p in (first, second)]
    codes = sorted(code for code, _ in results)
    busy = [err for code, err in results if code != 0]
    checks = {
        "one_ran_one_refused": codes == [0, 2] and "being written by another run" in busy[0],
        "same_weights_and_records": records(output / "metrics.jsonl") == reference["records"],
        "no_leftovers": not leftovers(output.parent),
    }
    return {
        "stage": "two_writers",
        "checks": checks,
        "survived": all(checks.values()),
        "bytes_lost": 0,
    }


def io_error_scenarios(work: Path) -> list[dict]:
    """An object-store filesystem failing its Nth call, for every N over save + record + export commit."""
    import fsspec
    import keras
    import numpy as np
    from fsspec.implementations.memory import MemoryFileSystem

    from albert.outputs import atomic_output_dir, remove_leftovers, write_atomic
    from model import checkpointing
    from model.pretrain import MetricsLog

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
        """What a training run does at a checkpoint (and at its start: clear leftovers of a failed attempt)."""
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
    from prefect import flow
    from prefect.testing.utilities import prefect_test_harness
    from record_mutations import fuzz_reads

    from flows import tasks
    from flows.result_storage import JsonOnlyLocalFileSystem
    from pipelines.segment import SegmentConfig

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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--kills", type=int, default=2, help="SIGKILLs per stage")
    parser.add_argument(
        "--work", default=None, help="work directory (default: a temporary one, removed after)"
    )
    parser.add_argument(
        "--only",
        default=None,
        help="comma-separated stages to kill (then no two-writer or I/O faults);"
        " `records`: the record fuzz",
    )
    parser.add_argument(
        "--records", type=int, default=20000, help="mutations of a cached result record to read"
    )
    args = parser.parse_args()
    only = args.only.split(",") if args.only else None
    rng = random.Random(args.seed)
    work = Path(args.work or tempfile.mkdtemp(prefix="albert-faults-"))
    try:
        ref_commands = stage_commands(work, work / "ref")
        references: dict[str, dict] = {}
        needed = {
            "segment": ["segment"],
            "segment-2-workers": ["segment", "segment-2-workers"],
            "vocab": ["segment", "vocab"],
            "tfrecords": ["segment", "vocab", "tfrecords"],
            "records": [],
        }
        wanted = (
            {n for stage in only for n in needed.get(stage, list(ref_commands))}
            if only
            else set(ref_commands)
        )
        for name, command in ref_commands.items():
            if name not in wanted:
                continue
            seconds, summary = run(command)
            output = Path(command[command.index("--output") + 1])
            references[name] = {
                "seconds": seconds,
                "tree": tree(output),
                "weights": summary.get("weights_sha256"),
                "records": records(output / "metrics.jsonl"),
            }
        if "segment-2-workers" in references:  # any worker count: the same bytes
            references["segment-2-workers"]["tree"] = references["segment"]["tree"]
        commands = stage_commands(work, work / "faults")
        scenarios = []
        for name, command in commands.items():
            if only and name not in only:
                continue
            output = Path(command[command.index("--output") + 1])
            for _ in range(args.kills):
                scenarios.append(
                    kill_scenario(
                        name, command, output, references[name], references[name]["seconds"], rng
                    )
                )
        if not only:
            scenarios.append(two_writers(commands, work, references["pretrain"]))
            scenarios.extend(io_error_scenarios(work))
        fuzz = record_fuzz(work, args.records, args.seed) if not only or "records" in only else None
        failed = [s for s in [*scenarios, fuzz] if s and not s["survived"]]
        print(
            json.dumps(
                {
                    "faults_injected": len(scenarios),
                    "survived": sum(1 for s in scenarios if s["survived"]),
                    "bytes_lost": sum(s["bytes_lost"] for s in scenarios),
                    "kills": sum(
                        1 for s in scenarios if s["stage"] not in ("two_writers", "io_error")
                    ),
                    "io_errors": sum(1 for s in scenarios if s["stage"] == "io_error"),
                    "record_mutations": fuzz,
                    "reference_seconds": {k: round(v["seconds"], 1) for k, v in references.items()},
                    "failed": failed,
                    "kill_details": [s for s in scenarios if s["stage"] not in ("io_error",)],
                    "seed": args.seed,
                    "cpu": cpu_model(),
                },
                sort_keys=True,
            )
        )
    finally:
        if not args.work:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
