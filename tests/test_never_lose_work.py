"""Never lose a user's work: resume instead of restart, one writer per output, atomic commits,
metrics logs that survive kills and object stores, retried Beam bundles (real files, real
training)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from albert import locks
from albert.errors import StageError
from albert.fs import filesystem, join, open_file
from albert.outputs import (
    MOVED_ASIDE,
    atomic_output_dir,
    move_aside,
    moved_aside_copies,
    write_atomic,
)

# --------------------------------------------------------------------------------------------
# One writer per output


def _hold_lock_in_child(output: Path) -> subprocess.Popen:
    code = (
        "import sys, time\nfrom albert.locks import output_lock\n"
        f"with output_lock({str(output)!r}):\n    print('held', flush=True)\n    time.sleep(120)\n"
    )
    child = subprocess.Popen(
        [sys.executable, "-c", code],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])},
    )
    assert child.stdout.readline().strip() == "held"
    return child


def test_a_second_writer_fails_at_once_naming_the_first_and_a_killed_one_frees_the_output(tmp_path):
    output = tmp_path / "segment"
    with atomic_output_dir(str(output)) as temp:
        Path(temp, "part").write_text("finished")
    child = _hold_lock_in_child(output)
    try:
        busy = rf"being written by another run \(pid {child.pid} on "
        with (
            pytest.raises(locks.OutputBusyError, match=busy),
            atomic_output_dir(str(output)) as temp,
        ):
            Path(temp, "part").write_text("second")
        assert (output / "part").read_text() == "finished"  # the first run's output is untouched
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()
    with atomic_output_dir(str(output)) as temp:  # the kernel released the dead holder's lock
        Path(temp, "part").write_text("third")
    assert (output / "part").read_text() == "third"
    [kept] = moved_aside_copies(str(output))  # the first run's output, under a new name
    assert Path(kept, "part").read_text() == "finished"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["segment", Path(kept).name]  # no more


def test_same_thread_nests_other_threads_wait_their_turn(tmp_path):
    import threading

    output = str(tmp_path / "pretrain")
    errors = []
    with locks.output_lock(output), locks.output_lock(output):  # a task and the stage it calls
        thread = threading.Thread(target=lambda: errors.append(_try_lock(output)))
        thread.start()
        thread.join()
    assert isinstance(errors[0], locks.OutputBusyError) and f"pid {os.getpid()}" in str(errors[0])
    assert _try_lock(output) is None


def _try_lock(output: str) -> Exception | None:
    try:
        with locks.output_lock(output):
            return None
    except locks.OutputBusyError as error:
        return error


def test_object_store_lock_is_stale_only_when_its_holder_is_gone():
    import socket

    fs, _ = filesystem("memory://")
    output = "memory://locks-test/pretrain"
    now = time.time()
    live_elsewhere = {
        "pid": 1,
        "host": "other-host",
        "started": now,
        "heartbeat": now,
        "token": "x",
    }
    fs.pipe("/locks-test/pretrain.lock", json.dumps(live_elsewhere).encode())
    with (
        pytest.raises(locks.OutputBusyError, match="pid 1 on other-host"),
        locks.output_lock(output),
    ):
        pass
    silent = dict(live_elsewhere, heartbeat=now - locks.STALE_SECONDS - 1)
    dead_here = dict(live_elsewhere, host=socket.gethostname(), pid=2**22 + 1)
    for stale in (silent, dead_here):
        fs.pipe("/locks-test/pretrain.lock", json.dumps(stale).encode())
        with locks.output_lock(output):
            assert json.loads(fs.cat("/locks-test/pretrain.lock"))["pid"] == os.getpid()
        assert not fs.exists("/locks-test/pretrain.lock")


# --------------------------------------------------------------------------------------------
# Atomic commits, leftovers of killed runs


def test_commit_swaps_whole_outputs_and_cleans_what_killed_runs_left(tmp_path):
    output = tmp_path / "export"
    with atomic_output_dir(str(output), keep_previous=False) as temp:
        Path(temp, "old-only").write_text("1")
        Path(temp, "shared").write_text("old")
    for leftover in ("export.tmp-dead0001", "export.old-dead0002"):  # killed mid-write / mid-commit
        (tmp_path / leftover).mkdir()
        (tmp_path / leftover / "spill.run").write_bytes(b"x" * 100)
    with atomic_output_dir(str(output), keep_previous=False) as temp:
        Path(temp, "shared").write_text("new")
    assert (
        sorted(p.name for p in output.iterdir()) == ["shared"]
        and (output / "shared").read_text() == "new"
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["export"]


@pytest.mark.parametrize("root", ["local", "memory://keep-test"])
def test_a_different_output_moves_the_finished_one_aside_the_same_one_keeps_it(root, tmp_path):
    fs, base = filesystem(str(tmp_path) if root == "local" else root)
    output = join(str(tmp_path) if root == "local" else root, "vocab")

    def commit(files: dict[str, str]) -> None:
        with atomic_output_dir(output) as temp:
            for name, text in files.items():
                with open_file(join(temp, name), "w") as handle:
                    handle.write(text)

    def contents(url: str) -> dict[str, str]:
        path = filesystem(url)[1]
        return {name[len(path) + 1 :]: fs.cat_file(name).decode() for name in sorted(fs.find(path))}

    first = {"spiece.model": "pieces", "vocab_stats.json": '{"unk_rate": 0.1, "wall_seconds": 1.5}'}
    commit(first)
    bookkeeping = {".stage-key": "vocab-1\n"}  # the flow's, written after the commit
    fs.pipe(join(filesystem(output)[1], ".stage-key"), b"vocab-1\n")
    commit({**first, "vocab_stats.json": '{"unk_rate": 0.1, "wall_seconds": 9.0}'})  # same settings
    assert moved_aside_copies(output) == [] and contents(output) == {**first, **bookkeeping}

    commit({"spiece.model": "other pieces", "vocab_stats.json": '{"unk_rate": 0.2}'})  # others
    [kept] = moved_aside_copies(output)
    assert MOVED_ASIDE.match(kept.rsplit("/", 1)[-1])["output"] == "vocab"
    assert contents(kept) == {**first, **bookkeeping}  # whole, bookkeeping included
    assert contents(output)["spiece.model"] == "other pieces"
    commit(first)  # back to the first parameters: the second output is kept too
    assert len(moved_aside_copies(output)) == 2 and contents(output) == first
    assert not [p for p in fs.find(base) if ".tmp-" in p or ".old-" in p or p.endswith(".lock")]


def test_write_atomic_replaces_whole_files(tmp_path):
    target = tmp_path / "deep" / "state.json"
    write_atomic(str(target), b"one")
    write_atomic(str(target), b"two")
    assert target.read_bytes() == b"two" and [p.name for p in target.parent.iterdir()] == [
        "state.json"
    ]


def test_moving_aside_keeps_everything_under_a_new_name(tmp_path):
    output = tmp_path / "pretrain"
    (output / "checkpoints" / "ckpt-000000005").mkdir(parents=True)
    moved = move_aside(str(output))
    assert not output.exists() and Path(moved, "checkpoints", "ckpt-000000005").is_dir()
    assert Path(moved).name.startswith("pretrain.previous-")


def test_runs_gc_lists_by_default_and_removes_only_moved_aside_outputs_when_asked(tmp_path, capsys):
    import threading

    from albert import cli

    run_dir = tmp_path / "run"
    for name in (
        "vocab",
        "vocab.previous-20261124T130501Z",
        "pretrain.previous-20261124T130501Z-2",
        "tfrecords.previous-20261124T130502Z",
        "notes.previous",
        "vocab.tmp-0001",
    ):
        (run_dir / name).mkdir(parents=True)
        (run_dir / name / "data").write_bytes(b"x" * 1500)
    kept = {"vocab", "notes.previous", "vocab.tmp-0001"}

    assert cli.main(["runs", "gc", str(run_dir)]) == 0  # a dry run: lists, removes nothing
    out = capsys.readouterr().out
    assert "3 moved-aside output(s), 4.5 kB" in out
    assert f"{run_dir}/vocab.previous-20261124T130501Z  (1.5 kB)" in out
    assert "nothing removed" in out and len(list(run_dir.iterdir())) == 6

    held, release = threading.Event(), threading.Event()

    def live_run() -> None:  # a run writing tfrecords/ holds its lock: its moved-aside copy stays
        with locks.output_lock(str(run_dir / "tfrecords")):
            held.set()
            release.wait()

    writer = threading.Thread(target=live_run)
    writer.start()
    held.wait()
    try:
        assert cli.main(["runs", "gc", str(run_dir), "--yes"]) == 0
    finally:
        release.set()
        writer.join()
    out = capsys.readouterr().out
    assert f"removed {run_dir}/pretrain.previous-20261124T130501Z-2  (1.5 kB)" in out
    assert f"skipped {run_dir}/tfrecords.previous-20261124T130502Z: " in out
    assert "removed 2 of 3" in out
    assert {p.name for p in run_dir.iterdir()} == kept | {"tfrecords.previous-20261124T130502Z"}

    assert cli.main(["runs", "gc", str(tmp_path / "missing")]) == 2
    assert "no such run directory" in capsys.readouterr().err


def test_a_retried_merge_bundle_finds_its_run_files(tmp_path):
    from pipelines.common.shards import WriteShards, write_run

    runs = []
    for number, pairs in enumerate([[(b"b", b"2"), (b"a", b"1")], [(b"c", b"3")]]):
        runs.append(str(tmp_path / f"run-{number}.run"))
        with open(runs[-1], "wb") as handle:
            write_run(handle, pairs)
    writer = WriteShards(str(tmp_path / "part"), 1, ".txt")
    first = Path(writer._merge((0, runs))).read_bytes()
    assert (
        Path(writer._merge((0, runs))).read_bytes() == first == b"123"
    )  # the runner retried the bundle


# --------------------------------------------------------------------------------------------
# metrics.jsonl: torn lines, exact resume, object stores


def test_metrics_log_drops_a_torn_line_and_keeps_the_records_before_the_checkpoint(tmp_path):
    from model.pretrain import MetricsLog

    path = tmp_path / "metrics.jsonl"
    path.write_text('{"step": 1}\n{"step": 2}\n{"step": 3}\n{"step": 4, "lo')  # killed mid-line
    log = MetricsLog(str(path), kept=2)
    log.append({"step": 3, "loss": 1.0})
    assert path.read_text() == '{"step": 1}\n{"step": 2}\n{"loss": 1.0, "step": 3}\n'
    assert [
        json.loads(line)["step"] for line in MetricsLog(str(path), kept=None, resume_step=2).lines
    ] == [1, 2]


def test_metrics_log_keeps_every_record_on_gcs():
    import cloud_harness as harness

    from model.pretrain import MetricsLog

    with harness.loopback_only(), harness.gcs_emulator("bucket"):
        path = "gs://bucket/run/pretrain/metrics.jsonl"
        log = MetricsLog(path)
        for step in (10, 20, 30):
            log.append({"step": step, "split": "train"})
        resumed = MetricsLog(path, kept=2)  # resumed from the checkpoint taken after two records
        resumed.append({"step": 30, "split": "train", "again": True})
        fs = harness.gcs_filesystem()
        lines = fs.cat("bucket/run/pretrain/metrics.jsonl").decode().splitlines()
        assert [json.loads(line)["step"] for line in lines] == [10, 20, 30] and json.loads(
            lines[-1]
        )["again"]
        assert not [p for p in fs.find("bucket/run") if ".tmp-" in p]


# --------------------------------------------------------------------------------------------
# Training: resume to the same weights and records; extend; refuse what cannot be continued


@pytest.mark.slow
@pytest.mark.keras
def test_a_killed_run_resumes_to_the_same_weights_and_records_and_extends_without_losing_any(
    tmp_path, tmp_path_factory
):
    import pretrain_runs
    from pretrain_runs import config, metrics_records

    from model.pretrain import IncompatibleOutputError, run

    data = pretrain_runs.records(tmp_path_factory)
    whole, whole_summary = pretrain_runs.reference(tmp_path_factory)  # 6 steps, uninterrupted

    class Killed(Exception):
        pass

    def kill_at_step_4(record):  # after the step-4 record is written, before its checkpoint
        if record["step"] == 4:
            raise Killed

    output = tmp_path / "interrupted"  # its batches prepared by 2, then 1 input worker(s)
    with pytest.raises(Killed):
        run(config(data, output, input_workers=2), on_metrics=kill_at_step_4)
    resumed = run(config(data, output, input_workers=1))  # from ckpt-2, across an epoch's end
    assert resumed["weights_sha256"] == whole_summary["weights_sha256"]
    assert metrics_records(output) == metrics_records(whole)

    first = (output / "metrics.jsonl").read_text().splitlines()
    extended = run(config(data, output, steps=8))  # --steps 6 -> 8 trains steps 7 and 8
    assert extended["steps"] == 8
    lines = (output / "metrics.jsonl").read_text().splitlines()
    assert lines[: len(first)] == first
    assert [(r["step"], r["split"]) for r in metrics_records(output)[len(first) :]] == [
        (7, "train"),
        (8, "train"),
        (8, "heldout"),
    ]

    with pytest.raises(StageError, match="newest checkpoint is at step 8, past --steps 3"):
        run(config(data, output, steps=3))
    with pytest.raises(IncompatibleOutputError, match=r"another training run \(seed 12345 -> 1\)"):
        run(config(data, output, steps=9, seed=1))
    with pytest.raises(IncompatibleOutputError, match="resume is off"):
        run(config(data, output, steps=9, resume=False))
    assert (output / "checkpoints" / "ckpt-000000008").is_dir()  # nothing was deleted


# --------------------------------------------------------------------------------------------
# No processes left behind


def test_a_killed_command_leaves_no_child_processes(tmp_path):
    import psutil

    code = (
        "import subprocess, sys, time\nfrom albert import reaper\nreaper.watch()\n"
        "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(300)'])\n"
        "print(child.pid, flush=True)\ntime.sleep(300)\n"
    )
    command = subprocess.Popen(
        [sys.executable, "-c", code],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])},
    )
    child = psutil.Process(int(command.stdout.readline()))
    time.sleep(2 * 0.5 + 0.5)  # the watchdog notes its descendants every 0.5 s
    command.send_signal(signal.SIGKILL)
    command.wait()
    try:
        child.wait(timeout=30)
    except psutil.TimeoutExpired:
        child.kill()
        pytest.fail("the killed command's child process was left running")


def test_a_killed_beam_job_leaves_no_scratch_directory(tmp_path):
    code = (
        "import time\nimport apache_beam as beam\nfrom albert import reaper\n"
        "from pipelines.common.runner import pipeline_options, run_pipeline\nreaper.watch()\n"
        "pipeline = beam.Pipeline(options=pipeline_options())\n"
        "_ = pipeline | beam.Create([1]) | beam.Map(\n"
        "    lambda _: print('running', flush=True) or time.sleep(300))\n"
        "print(pipeline.local_tempdir, flush=True)\nrun_pipeline(pipeline)\n"
    )
    env = {
        **os.environ,
        "PYTHONPATH": str(Path(__file__).resolve().parents[1]),
        "TMPDIR": str(tmp_path),
    }
    command = subprocess.Popen(
        [sys.executable, "-c", code], stdout=subprocess.PIPE, text=True, env=env
    )
    scratch = Path(command.stdout.readline().strip())
    assert scratch.parent == tmp_path and scratch.name.startswith("beam-pipeline-temp")
    assert scratch.is_dir()
    assert command.stdout.readline().strip() == "running"  # running: its scratch dir is registered
    command.send_signal(signal.SIGKILL)
    command.wait()
    deadline = time.monotonic() + 30
    while scratch.exists() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not scratch.exists(), "the killed Beam job's scratch directory was left behind"
