"""The GPU check's kit (`check.py`'s module doc): built here (`build_kit`: the wheelhouse, the
books' shards, the SentencePiece model, part of SST-2; within what a device command carries with
this checkout) and installed on the device (`install`: the wheelhouse into a folder of its own,
the environment every command of the check runs in)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from trainer import SHARED, SPM_MODEL, prepare

HERE = Path(__file__).resolve().parent
SST2_TRAIN_ROWS = 4000  # SST-2 training rows the kit carries (a fine-tune of a few hundred steps)


def build_kit(kit: Path, python_version: str, max_mib: float) -> None:
    """The kit (see the module doc), failing when it outgrows `max_mib` with this checkout."""
    if kit.exists():
        sys.exit(f"{kit} exists: give a new --kit")
    subprocess.run(
        [sys.executable, str(HERE / "wheelhouse.py"), "--output", str(kit / "wheelhouse")]
        + ["--python-version", python_version],
        check=True,
    )
    prepare(kit / "shards", [128, 512], max_mib, wikipedia=False)
    shutil.copy2(SPM_MODEL, kit / SPM_MODEL.name)
    sst2 = kit / "SST-2"
    sst2.mkdir()
    shutil.copy2(SHARED / "glue" / "SST-2" / "dev.tsv", sst2 / "dev.tsv")
    with open(SHARED / "glue" / "SST-2" / "train.tsv", encoding="utf-8") as rows:
        head = [row for _, row in zip(range(SST2_TRAIN_ROWS + 1), rows)]  # the header too
    (sst2 / "train.tsv").write_text("".join(head), encoding="utf-8")
    root = HERE.parents[1]
    checkout = subprocess.run(
        ["git", "ls-files", "-z"], cwd=root, capture_output=True, check=True
    ).stdout.split(b"\0")
    carried = sum(p.stat().st_size for p in kit.rglob("*") if p.is_file()) + sum(
        (root / name.decode()).stat().st_size for name in checkout if name
    )
    print(json.dumps({"kit": str(kit), "carried_mib": round(carried / 2**20, 1)}))
    if carried > max_mib * 2**20:
        sys.exit(f"{kit} and the checkout are {carried / 2**20:.1f} MiB, over {max_mib} MiB")


def install(kit: Path, work: Path) -> tuple[dict, float]:
    """The wheelhouse installed into work/site; the environment every command runs in, and the
    install's seconds."""
    start = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--disable-pip-version-check", "-q"]
        + ["--no-index", "--no-deps", "--target", str(work / "site")]
        + [str(p) for p in sorted((kit / "wheelhouse").glob("*.whl"))],
        check=True,
    )
    env = {
        **os.environ,
        "PYTHONPATH": str(work / "site"),
        "KERAS_BACKEND": "jax",
        "JAX_COMPILATION_CACHE_DIR": str(work / "jax-cache"),
    }
    return env, time.perf_counter() - start
