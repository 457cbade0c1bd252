"""Every command that trains, under every bad environment (issue 46's sweep): `albert run`,
`python -m model.pretrain`, a model line's night and `albert finetune`, each under a PREFECT_HOME
whose parent cannot be made, a full disk (a 4 MiB tmpfs full to its last byte: a directory or an
empty file can still be made there, the first write of data is refused: each command's check of
its output, a file of one byte, before any training and, for the stages, before Keras loads), a
read-only output (a read-only tmpfs) and SIGTERM 1 s after start. Every case ends with the
documented exit code (docs/cli.md): 2 for a bad environment, 75 for a signal; no traceback, and at
most 3 lines of warnings and errors (at most 3 lines at all where it fails before any work: every
case but a flow's on the full disk, whose run has started).

The commands that need no Prefect (`model.pretrain`, `albert finetune`) import none of it
(tests/test_layering.py), so a PREFECT_HOME that cannot be made cannot stop them: their signal case
runs under one, and ends as a signal does (75), not as a refused environment (2).

Real processes, real mounts (skipped with the reason where this user may not mount), real signals.
A case that fails before the work starts does so by design in seconds (imports aside). A flow whose
run starts (the full disk) talks to the session's Prefect server, not a temporary one of its own.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import session_api_url
from line_inputs import base, documents, write_docs  # noqa: F401  (`base`: a fixture)
from test_flows_pipeline import tiny_flow_flags, write_corpus

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[1]
COMMANDS = ("albert run", "model.pretrain", "night", "albert finetune")
NEEDS_PREFECT = ("albert run", "night")
SIGNAL = "SIGTERM at 1 s"
CASES = [
    (command, case)
    for command in COMMANDS
    for case in ("PREFECT_HOME", "full disk", "read-only", SIGNAL)
    if case != "PREFECT_HOME" or command in NEEDS_PREFECT  # else: under the signal case's
]
LOUD = re.compile(r"\b(WARNING|ERROR|CRITICAL)\b|Traceback|^\w*Error\b")
NATIVE = re.compile(r"^[IWEF]\d{4} ")
"""A line TensorFlow's or XLA's C++ code prints while it loads (`E0000 … failed call to cuInit` on
a machine without a GPU): the machine's, not the failure's (docs/cli.md, "Logging")."""


def _mount(directory: Path, options: str) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(directory)],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        pytest.skip(f"this user may not mount a tmpfs: {done.stderr.strip() or done.returncode}")


@pytest.fixture(scope="module")
def places(tmp_path_factory):
    """A full disk (4 MiB, nothing left) and a read-only one, unmounted after the module."""
    root = tmp_path_factory.mktemp("mounts")
    full, read_only = root / "full", root / "read-only"
    _mount(full, "size=4m")
    with open(full / "filler", "wb", buffering=0) as filler:
        try:
            while filler.write(b"\0" * 2**16):
                pass
        except OSError:  # no space left: full to the last byte
            pass
    try:
        _mount(read_only, "ro,size=1m")
        yield {"full disk": full, "read-only": read_only}
    finally:
        for mount in (read_only, full):
            subprocess.run(["umount", str(mount)], capture_output=True, check=False)


@pytest.fixture(scope="module")
def inputs(tmp_path_factory, base):  # noqa: F811  (the imported fixture)
    """The commands' inputs: a corpus, the base run's TFRecords and vocabulary, a tiny SST-2."""
    root = tmp_path_factory.mktemp("inputs")
    sst2 = root / "SST-2"
    sst2.mkdir()
    rows = [f"{text.splitlines()[0]}\t{i % 2}" for i, text in enumerate(documents(24, 3))]
    for name, part in (("train.tsv", rows[:16]), ("dev.tsv", rows[16:])):
        (sst2 / name).write_text("sentence\tlabel\n" + "\n".join(part) + "\n")
    inbox = root / "inbox"
    write_docs(inbox / "night-1.txt", documents(20, 7))
    return {
        "corpus": write_corpus(root / "corpus.txt"),
        "base": base,
        "inbox": inbox,
        "sst2": sst2,
    }


def argv(command: str, inputs: dict, out: Path) -> list[str]:
    """The command line of `command` writing under `out`: the fewest steps and examples it
    accepts (where it works, exit 0, it trains them all)."""
    base_run = inputs["base"]
    if command == "albert run":
        return ["-m", "albert.cli", "run", *tiny_flow_flags(inputs["corpus"], out / "run", 2)]
    if command == "model.pretrain":
        return [
            *("-m", "model.pretrain", "--data", str(base_run / "tfrecords"), "--output", str(out)),
            *("--preset", "albert-nano", "--steps", "1", "--batch-size", "2"),
            *("--eval-batches", "1", "--no-progress", "--no-jit-compile", "--no-export"),
        ]
    if command == "night":
        return [
            *("-m", "flows.domain.flow", "--line", str(out / "line"), "--base", str(base_run)),
            *("--input", str(inputs["inbox"] / "*.txt"), "--preset", "albert-nano"),
            *("--batch-size", "8", "--num-shards", "2", "--steps", "2"),
            *("--segment", json.dumps({"format": "text", "num_shards": 2, "quality": False})),
            *("--pretrain", json.dumps({"jit_compile": False, "progress": False})),
        ]
    return [
        *("-m", "albert.cli", "finetune", "--task", "sst2", "--init", "random"),
        *("--preset", "albert-nano", "--spm-model", str(base_run / "vocab" / "spiece.model")),
        *("--data-dir", str(inputs["sst2"]), "--output", str(out / "sst2")),
        *("--max-seq-length", "16", "--train-steps", "1", "--eval-every", "1"),
        *("--batch-size", "2", "--max-train-examples", "2", "--max-dev-examples", "2"),
    ]


@pytest.mark.parametrize("command, case", CASES)
def test_every_command_under_every_bad_environment(command, case, inputs, places, tmp_path):
    env = {**os.environ, "PYTHONPATH": str(REPO), "PREFECT_HOME": str(tmp_path / "prefect")}
    out = tmp_path / "out"
    if case == "PREFECT_HOME" or (case == SIGNAL and command not in NEEDS_PREFECT):
        (tmp_path / "a-file").write_text("")
        env["PREFECT_HOME"] = str(tmp_path / "a-file" / "prefect")
    elif case in places:
        out = places[case] / f"{command.replace(' ', '-')}"
    if case == "full disk" and command in NEEDS_PREFECT:  # the work starts: a flow run
        env["PREFECT_API_URL"] = session_api_url()
    process = subprocess.Popen(
        [sys.executable, *argv(command, inputs, out)],
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    if case == SIGNAL:
        time.sleep(1.0)
        process.send_signal(signal.SIGTERM)
    output, _ = process.communicate(timeout=600)
    lines = output.strip().splitlines()
    assert process.returncode == (75 if case == SIGNAL else 2), output[-3000:]
    assert "Traceback" not in output, output[-3000:]
    loud = [line for line in lines if LOUD.search(line) and not NATIVE.match(line)]
    assert len(loud) <= 3, loud
    (outcome,) = [line for line in lines if re.search(r" (failed|interrupted): ", line)]
    if case == SIGNAL:  # fine-tuning, once its command runs, says what it loses
        stopped = "during fine-tuning" if command == "albert finetune" else "before the first step"
        assert f"interrupted: SIGTERM {stopped}" in outcome or (
            "interrupted: SIGTERM before the first step: nothing to save; resume with: " in outcome
        ), outcome
        if command == "model.pretrain":  # still importing TensorFlow at 1 s: its one line
            assert [line for line in lines if not NATIVE.match(line)] == [outcome], lines
            assert f"resume with: python -m model.pretrain --data {inputs['base']}" in outcome
    elif case == "PREFECT_HOME":  # one line, before Prefect starts and before any output
        assert f"PREFECT_HOME={env['PREFECT_HOME']}: cannot be made: not a directory" in outcome
        assert lines == [outcome] and not out.exists(), lines
    elif case == "read-only":
        assert f"{out}" in outcome and "read-only file system" in outcome.lower(), outcome
    else:  # the check of the first output: before any work
        full = "cannot be written: no space left on device"
        assert f"{out}" in outcome and full in outcome.lower(), outcome
    if case != "full disk" or command not in NEEDS_PREFECT:  # failed before any work: one line
        assert len(lines) <= 3, lines
