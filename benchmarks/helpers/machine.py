"""The machine a benchmark ran on: CPU model and vector extensions, printed beside its figures
(speed is only comparable side by side on one CPU)."""

from __future__ import annotations

import platform
from pathlib import Path

# The extensions that decide CPU matmul speed, in the order they are reported.
VECTOR_EXTENSIONS = ("avx2", "fma", "avx512f", "avx512_bf16", "avx512_vnni", "amx_bf16", "amx_tile")


def _cpuinfo_value(key: str) -> str | None:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith(key):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return None


def cpu_model() -> str:
    """The CPU's model name (/proc/cpuinfo), else what `platform` knows."""
    return _cpuinfo_value("model name") or platform.processor() or "unknown"


def vector_extensions() -> list[str]:
    """Which of `VECTOR_EXTENSIONS` the CPU has (empty where /proc/cpuinfo is absent)."""
    flags = set((_cpuinfo_value("flags") or "").split())
    return [name for name in VECTOR_EXTENSIONS if name in flags]
