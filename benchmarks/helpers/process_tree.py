"""Run a command and measure its whole process tree: wall and CPU seconds, peak RSS.

For benchmarks of stages run as users run them (Beam's worker processes included)."""

from __future__ import annotations

import os
import subprocess
import threading
import time
from pathlib import Path

import psutil


def measure(command: list[str], cwd: Path, env: dict | None = None) -> dict:
    """Run `command`: wall and CPU seconds and peak RSS of its whole process tree; fails loudly.

    The tree is sampled every 0.2 s: RSS summed over its processes, and each process's own CPU
    seconds as last seen, so Beam's worker processes count whether or not the driver reaps them."""
    start = time.perf_counter()
    process = subprocess.Popen(
        command, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    peak, cpu = [0], {}
    done = threading.Event()

    def sample():
        root = psutil.Process(process.pid)
        while not done.is_set():
            try:
                tree = [root, *root.children(recursive=True)]
            except psutil.Error:
                tree = []
            total = 0
            for proc in tree:
                try:
                    with proc.oneshot():
                        total += proc.memory_info().rss
                        times = proc.cpu_times()
                        cpu[proc.pid] = times.user + times.system
                except psutil.Error:
                    pass
            peak[0] = max(peak[0], total)
            done.wait(0.2)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    stderr = process.stderr.read()
    _, status, usage = os.wait4(process.pid, 0)
    done.set()
    sampler.join()
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{' '.join(command)} failed:\n{stderr.decode(errors='replace')[-3000:]}")
    reaped = usage.ru_utime + usage.ru_stime  # the driver and the children it reaped
    return {
        "wall_s": round(time.perf_counter() - start, 1),
        "cpu_s": round(max(reaped, sum(cpu.values())), 1),
        "peak_rss_mb": round(peak[0] / 2**20, 1),
        "largest_process_rss_mb": round(usage.ru_maxrss / 1024, 1),
    }
