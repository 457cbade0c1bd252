"""The GPU check's kit (`check.py`'s module doc): built here (`build_kit`: the wheelhouse, the
books' shards, the SentencePiece model, part of SST-2; within what a device command carries with
this checkout), checked before it is installed (`kit_problem`: missing, no wheels, wheels for
another Python, over the carry limit: one line naming the `prepare` command that fixes it) and
installed on the device (`install`: the wheelhouse into a folder of its own, the environment every
command of the check runs in)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

from benchmarks.gpu.trainer import SHARED, SPM_MODEL, prepare

HERE = Path(__file__).resolve().parent
SST2_TRAIN_ROWS = 4000  # SST-2 training rows the kit carries (a fine-tune of a few hundred steps)
CARRY_MIB = 64.0  # what a device command carries: the kit and this checkout
KIT_LEAVES_OUT = ("melville-moby_dick.txt", "whitman-leaves.txt")
"""The two longest books, left out of the kit's shards: all 13 make 37.6 MiB of s128 + s512
shards, 70 MiB with the wheelhouse and the checkout (2026-12-01), over what a command carries."""

_CPYTHON_TAG = re.compile(r"^cp(\d)(\d+)$")


def build_kit(kit: Path, python_version: str, max_mib: float) -> None:
    """The kit (see the module doc), failing when it outgrows `max_mib` with this checkout."""
    if kit.exists():
        sys.exit(f"{kit} exists: give a new --kit")
    subprocess.run(
        [sys.executable, str(HERE / "wheelhouse.py"), "--output", str(kit / "wheelhouse")]
        + ["--python-version", python_version],
        check=True,
    )
    prepare(kit / "shards", [128, 512], max_mib, wikipedia=False, leave_out=KIT_LEAVES_OUT)
    shutil.copy2(SPM_MODEL, kit / SPM_MODEL.name)
    sst2 = kit / "SST-2"
    sst2.mkdir()
    shutil.copy2(SHARED / "glue" / "SST-2" / "dev.tsv", sst2 / "dev.tsv")
    with open(SHARED / "glue" / "SST-2" / "train.tsv", encoding="utf-8") as rows:
        head = [row for _, row in zip(range(SST2_TRAIN_ROWS + 1), rows)]  # the header too
    (sst2 / "train.tsv").write_text("".join(head), encoding="utf-8")
    carried = carried_bytes(kit)
    print(json.dumps({"kit": str(kit), "carried_mib": round(carried / 2**20, 1)}))
    if carried > max_mib * 2**20:
        sys.exit(f"{kit} and the checkout are {carried / 2**20:.1f} MiB, over {max_mib} MiB")


def carried_bytes(kit: Path) -> int:
    """The bytes a device command carries: the kit and this checkout's tracked files."""
    root = HERE.parents[1]
    checkout = subprocess.run(
        ["git", "ls-files", "-z"], cwd=root, capture_output=True, check=True
    ).stdout.split(b"\0")
    tracked = [root / name.decode() for name in checkout if name]
    return sum(p.stat().st_size for p in kit.rglob("*") if p.is_file()) + sum(
        p.stat().st_size for p in tracked if p.is_file()
    )


def wheel_pythons(wheel: str) -> set[str]:
    """The CPython versions ('3.12') a wheel's file name says it is built for, each of its own
    ABI; empty for a pure wheel (py3) or a stable-ABI one (abi3)."""
    parts = wheel[: -len(".whl")].split("-")
    if len(parts) < 5 or parts[-2] == "abi3":
        return set()
    found = (_CPYTHON_TAG.match(tag) for tag in parts[-3].split("."))
    return {f"{m.group(1)}.{m.group(2)}" for m in found if m}


def kit_problem(
    kit: Path, python_version: str, max_mib: float = CARRY_MIB, carried: int | None = None
) -> str | None:
    """What keeps `kit` from being installed for `python_version` ('3.12'), in one line naming
    the command that fixes it; None when it can be. `carried`: the bytes a device command carries
    (`carried_bytes`)."""
    prepare = f"python benchmarks/gpu/check.py prepare --kit {kit}"
    fix = f"make it with `{prepare} --python-version {python_version}` (here, with the registry)"
    if not kit.is_dir():
        what = "is not a directory" if kit.exists() else "does not exist"
        return f"the GPU kit {kit} {what}: {fix}"
    wheels = sorted(p.name for p in (kit / "wheelhouse").glob("*.whl"))
    if not wheels:
        return f"the GPU kit {kit} holds no wheels ({kit / 'wheelhouse'}/*.whl): {fix}"
    other = sorted({v for w in wheels for v in wheel_pythons(w)} - {python_version})
    if other:
        return (
            f"the GPU kit {kit} holds wheels for Python {', '.join(other)}, this is Python "
            f"{python_version}: remove it and {fix}"
        )
    carried = carried_bytes(kit) if carried is None else carried
    if carried > max_mib * 2**20:
        return (
            f"the GPU kit {kit} and this checkout are {carried / 2**20:.1f} MiB, over the "
            f"{max_mib:g} MiB a device command carries: remove it and {fix}"
        )
    return None


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
