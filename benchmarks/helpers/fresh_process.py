"""A side of a comparison timed in a fresh process from its start (imports, reading, encoding,
training, the dev evaluation): a command (our CLI) or a Python function (Hugging Face's side)."""

from __future__ import annotations

import json
import multiprocessing
import os
import subprocess
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def finetune_command(command: list[str], output: Path) -> dict:
    """Run `command` (a fine-tuning CLI writing `output`; it, its checkpoints and its further
    pretraining removed first) from the repository root, its stdout discarded; fails loudly. Its
    `results.json` and wall seconds."""
    siblings = [f"{output}.checkpoints", f"{output}.further"]
    subprocess.run(["rm", "-rf", str(output), *siblings], check=True)
    start = time.perf_counter()
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    subprocess.run(command, cwd=REPO, env=env, check=True, stdout=subprocess.DEVNULL)
    wall = time.perf_counter() - start
    return {"results": json.loads((output / "results.json").read_text()), "wall_seconds": wall}


def in_fresh_process(function, *arguments) -> dict:
    """`function(*arguments)` (a dict) in a new interpreter, with `wall_seconds` from the start
    of that process (imports included), as a command is timed."""
    start = time.perf_counter()
    with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as pool:
        result = pool.submit(function, *arguments).result()
    return {**result, "wall_seconds": time.perf_counter() - start}
