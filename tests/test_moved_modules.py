"""The module paths users type that moved keep working for this release: each old path says on one
line of stderr where the module went, and is the new module (or, with `python -m`, runs it)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.backend_free

ROOT = Path(__file__).resolve().parents[1]
MOVED = {
    "pipelines.domain_select": "pipelines.select.stage",
    "pipelines.flex_template": "pipelines.common.flex_template",
    "pipelines.segment_config": "pipelines.segment.config",
    "pipelines.vocab_config": "pipelines.vocab.config",
    "pipelines.tfrecords_config": "pipelines.tfrecords.config",
    "model.evaluate": "model.evaluation.evaluate",
    "model.config": "model.network.config",
    "model.pretraining_model": "model.network.pretraining_model",
    "model.pretraining_metrics": "model.evaluation.heldout",
    "model.convert": "model.conversion.convert",
    "model.optimizers": "model.optimization.optimizers",
}
COMMANDS = {
    "pipelines.domain_select": "pipelines.select",
    "model.evaluate": "model.evaluation.evaluate",
}


def _run(code_or_module: list[str]) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, *code_or_module],
        check=False,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_every_shim_is_listed() -> None:
    shims = {
        ".".join(path.relative_to(ROOT).with_suffix("").parts)
        for layer in ("pipelines", "model")
        for path in (ROOT / layer).glob("*.py")
        if "from albert.moved import moved" in path.read_text(encoding="utf-8")
    }
    assert shims == set(MOVED)


def test_an_old_path_is_the_new_module_and_says_where_it_went() -> None:
    code = "import importlib\n" + "".join(
        f"assert importlib.import_module({old!r}) is importlib.import_module({new!r})\n"
        for old, new in MOVED.items()
    )
    result = _run(["-c", code])
    assert result.returncode == 0, result.stderr[-2000:]
    said = [line for line in result.stderr.splitlines() if " moved to " in line]
    assert said == [f"{old} moved to {new}" for old, new in MOVED.items()]


@pytest.mark.parametrize("old", sorted(COMMANDS))
def test_an_old_command_runs_the_new_one(old: str) -> None:
    result = _run(["-m", old, "--help"])
    assert result.returncode == 0, result.stderr[-2000:]
    assert f"python -m {old} moved to python -m {COMMANDS[old]}\n" in result.stderr
    assert result.stdout.startswith(f"usage: python -m {COMMANDS[old]} ")
