"""No processes left behind: a watchdog that stops what a command started once the command is gone.

A command killed with SIGKILL cannot stop its children: Prefect's temporary API server and the
worker processes of a multi-process Beam job would live on. `watch()` starts one small watchdog
process (in its own session, so a signal to the command's process group does not reach it) that
notes the command's descendants every `POLL_SECONDS` and, when the command has exited however it
exited, terminates those still running (SIGTERM, then SIGKILL after `GRACE_SECONDS`).

    python -m albert.reaper PID CREATE_TIME   (what watch() runs)
"""

from __future__ import annotations

import os
import subprocess
import sys
import time

import psutil

POLL_SECONDS = 0.5
GRACE_SECONDS = 5.0

_watchdog: subprocess.Popen | None = None


def watch() -> None:
    """Start the watchdog of this process (once per process; a no-op where psutil cannot see processes)."""
    global _watchdog
    if _watchdog is not None and _watchdog.poll() is None:
        return
    me = psutil.Process()
    _watchdog = subprocess.Popen(
        [sys.executable, "-m", "albert.reaper", str(me.pid), repr(me.create_time())],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        start_new_session=True, close_fds=True,
    )


def _alive(process: psutil.Process) -> bool:
    try:
        return process.is_running() and process.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def stop(processes: list[psutil.Process]) -> list[int]:
    """SIGTERM `processes`, SIGKILL those alive after the grace period; the pids that were stopped."""
    running = [p for p in processes if _alive(p)]
    for process in running:
        try:
            process.terminate()
        except psutil.NoSuchProcess:
            pass
    _, left = psutil.wait_procs(running, timeout=GRACE_SECONDS)
    for process in left:
        try:
            process.kill()
        except psutil.NoSuchProcess:
            pass
    return [p.pid for p in running]


def supervise(pid: int, create_time: float) -> list[int]:
    """Follow `pid`'s descendants until it is gone, then stop the ones still running."""
    try:
        parent = psutil.Process(pid)
        if abs(parent.create_time() - create_time) > 1e-3:
            return []
    except psutil.NoSuchProcess:
        return []
    me = os.getpid()
    seen: dict[tuple[int, float], psutil.Process] = {}
    while _alive(parent):
        try:
            for child in parent.children(recursive=True):
                if child.pid != me:
                    seen.setdefault((child.pid, child.create_time()), child)
        except psutil.NoSuchProcess:
            break
        time.sleep(POLL_SECONDS)
    return stop(list(seen.values()))


if __name__ == "__main__":
    supervise(int(sys.argv[1]), float(sys.argv[2]))
