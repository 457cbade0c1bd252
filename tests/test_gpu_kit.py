"""The GPU kit in its own environment: a fresh virtualenv holding only the wheelhouse's packages
(`benchmarks/gpu/wheelhouse.py`, built here for this Python) and CPU JAX at the project's pins, no
TensorFlow, as a GPU machine with JAX would install it. There `python -m model.pretrain` runs to its
end, every export of the default install written, and `benchmarks/gpu/train.py` measures one row
with each objective (masked-LM and replaced-token detection).

Building it needs the package registry (as CI has). The environment is made afresh each run (pip's
download cache aside): pip installs into it from outside (`pip --python`: the kit needs no pip of
its own) and compiles no module ahead (an import compiles what it loads)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from conftest import shared_path

pytestmark = pytest.mark.backend_free  # the kit's processes have their own environment

ROOT = Path(__file__).resolve().parents[1]
INSTALL = ("install", "--disable-pip-version-check", "-q", "--no-compile")


def jax_pins() -> list[str]:
    """jax and jaxlib as pyproject's `jax` extra pins them."""
    extra = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    return [p for p in extra["optional-dependencies"]["jax"] if re.match(r"jax(lib)?==", p)]


def checked(command: list[str], **options) -> subprocess.CompletedProcess:
    done = subprocess.run(command, capture_output=True, text=True, check=False, **options)
    assert done.returncode == 0, (command, done.stderr[-3000:])
    return done


@pytest.mark.slow
@pytest.mark.shared_data
def test_the_kit_trains_exports_and_measures_without_tensorflow(tmp_path):
    records = shared_path("reference", "ref_seq128.tfrecord")
    spm_model = shared_path("reference", "sp16k.model")
    python_version = f"{sys.version_info.major}.{sys.version_info.minor}"
    wheels = tmp_path / "wheelhouse"
    built = checked(
        [sys.executable, str(ROOT / "benchmarks/gpu/wheelhouse.py"), "--output", str(wheels)]
        + ["--python-version", python_version]
    )
    assert json.loads(built.stdout.strip().splitlines()[-1])["total_mib"] <= 60
    checked([sys.executable, "-m", "venv", "--without-pip", str(tmp_path / "kit")])
    python = str(tmp_path / "kit" / "bin" / "python")
    pip = [sys.executable, "-m", "pip", "--python", python, *INSTALL]
    checked([*pip, "-c", str(ROOT / "constraints.txt"), *jax_pins()])
    checked([*pip, "--no-index", "--no-deps", *map(str, sorted(wheels.glob("*.whl")))])

    # the kit's own environment: its installed package, not this checkout; no TensorFlow at all
    # (and, as in the suite's other JAX processes, XLA's optimisation passes off: tests/conftest.py)
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(tmp_path),
        "KERAS_BACKEND": "jax",
        "JAX_PLATFORMS": "cpu",
        "JAX_DISABLE_MOST_OPTIMIZATIONS": os.environ["JAX_DISABLE_MOST_OPTIMIZATIONS"],
    }
    absent = subprocess.run(
        [python, "-c", "import tensorflow"], check=False, env=env, stderr=subprocess.DEVNULL
    )
    assert absent.returncode != 0
    trained = checked(
        [python, "-m", "model.pretrain", "--data", str(records), "--spm-model", str(spm_model)]
        + ["--output", str(tmp_path / "run"), "--preset", "albert-nano", "--steps", "3"]
        + ["--batch-size", "8", "--eval-batches", "1", "--no-progress"],
        env=env,
        cwd=tmp_path,
        timeout=600,
    )
    summary = json.loads(trained.stdout[trained.stdout.index("{") :])
    assert summary["steps"] == 3 and "export_skipped" not in summary
    assert set(summary["export"]) == {"keras", "huggingface", "keras_hub"}
    assert (tmp_path / "run" / "export" / "hf" / "tokenizer.json").is_file()

    site = next((tmp_path / "kit" / "lib").glob("python*/site-packages"))
    measured = checked(  # the kit's package first; this checkout after it, for `benchmarks` alone
        [python, "-m", "benchmarks.gpu.train", "--presets", "albert-nano"]
        + ["--seqs", "32", "--batch-tokens", "256", "--steps", "2", "--warmup", "1"]
        + ["--objectives", "mlm,rtd"],
        env={**env, "PYTHONPATH": f"{site}{os.pathsep}{ROOT}"},
        cwd=tmp_path,
        timeout=600,
    )
    summary = json.loads(measured.stdout.strip().splitlines()[-1])
    assert [(r["objective"], r["sequences_per_s"] > 0) for r in summary["rows"]] == [
        ("mlm", True),
        ("rtd", True),
    ]
    assert summary["generator_cost"]["albert-nano s32"] > 0


def _check_run(kit: Path, work: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(ROOT / "benchmarks/gpu/check.py"), "run", "--kit", str(kit)]
        + ["--work", str(work), "--tiny"],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )


def _kit(tmp_path: Path, case: str) -> Path:
    kit = tmp_path / "kit"
    if case == "missing":
        return kit
    (kit / "wheelhouse").mkdir(parents=True)
    if case == "other Python":
        (kit / "wheelhouse" / "numpy-2.0.0-cp39-cp39-manylinux_2_17_x86_64.whl").touch()
    if case == "over the carry limit":
        (kit / "wheelhouse" / "albert-0.1-py3-none-any.whl").touch()
        with open(kit / "shards.bin", "wb") as big:  # sparse: 65 MiB counted, nothing written
            big.truncate(65 * 2**20)
    return kit


@pytest.mark.parametrize(
    "case, says",
    [
        ("missing", "does not exist"),
        ("empty", "holds no wheels"),
        ("other Python", "holds wheels for Python 3.9"),
        ("over the carry limit", "over the 64 MiB a device command carries"),
    ],
)
def test_a_kit_that_cannot_be_installed_is_one_line_naming_the_prepare_command(
    tmp_path, case, says
):
    """Issue 46, row 2: checked before pip runs; one line, exit 2, the fix named."""
    kit = _kit(tmp_path, case)
    done = _check_run(kit, tmp_path / "work")
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2 and len(lines) == 1 and not done.stdout, done
    assert says in lines[0] and f"check.py prepare --kit {kit}" in lines[0]
    assert not (tmp_path / "work").exists()  # nothing installed
