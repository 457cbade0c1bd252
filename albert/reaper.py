"""No processes left behind: a watchdog that stops what a command started once the command is gone.

A command killed with SIGKILL cannot stop its children: Prefect's temporary API server and the
worker processes of a multi-process Beam job would live on. `watch()` starts one small watchdog
process (in its own session, so a signal to the command's process group does not reach it) that
notes the command's descendants every `POLL_SECONDS` and, when the command has exited however it
exited, terminates those still running (SIGTERM, then SIGKILL after `GRACE_SECONDS`), then deletes
the scratch directories the command named with `remove_when_gone` that are still there (a killed
Beam job's `/tmp/beam-pipeline-temp*`, which Beam deletes only when the job ends).

    python -m albert.reaper PID CREATE_TIME   (what watch() runs; scratch paths arrive on its stdin)
"""

from __future__ import annotations

import os
import select
import shutil
import subprocess
import sys
import time

import psutil

POLL_SECONDS = 0.5
GRACE_SECONDS = 5.0

_watchdog: subprocess.Popen | None = None


def watch() -> None:
    """Start the watchdog of this process (once per process; a no-op where psutil cannot see
    processes)."""
    global _watchdog
    if _watchdog is not None and _watchdog.poll() is None:
        return
    me = psutil.Process()
    _watchdog = subprocess.Popen(
        [sys.executable, "-m", "albert.reaper", str(me.pid), repr(me.create_time())],
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
        close_fds=True,
    )


def remove_when_gone(path: str) -> None:
    """Have the watchdog delete the scratch directory `path`, if it is still there, once this
    command is gone; a no-op without a watchdog (or with a dead one: nothing is left to do it)."""
    if _watchdog is None or _watchdog.poll() is not None:
        return
    try:
        _watchdog.stdin.write(os.fsencode(path) + b"\n")
        _watchdog.stdin.flush()
    except BrokenPipeError:  # the watchdog died since poll()
        pass


class _Inbox:
    """The scratch paths a command sends its watchdog: one per line on a file descriptor."""

    def __init__(self, fd: int):
        self.fd, self.pending, self.paths, self.open = fd, b"", [], True

    def wait(self, timeout: float) -> bool:
        """Take in what arrives within `timeout` seconds; whether anything did (False at EOF)."""
        if not self.open:
            time.sleep(timeout)
            return False
        ready, _, _ = select.select([self.fd], [], [], timeout)
        if not ready:
            return False
        chunk = os.read(self.fd, 1 << 16)
        self.open = bool(chunk)
        *lines, self.pending = (self.pending + chunk).split(b"\n")
        self.paths += [os.fsdecode(line) for line in lines if line]
        return self.open


def _alive(process: psutil.Process) -> bool:
    try:
        return process.is_running() and process.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def stop(processes: list[psutil.Process]) -> list[int]:
    """SIGTERM `processes`, SIGKILL those alive after the grace period; the pids that were
    stopped."""
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


def supervise(pid: int, create_time: float, scratch_fd: int | None = None) -> list[int]:
    """Follow `pid`'s descendants until it is gone, then stop the ones still running and delete the
    scratch directories named on `scratch_fd` (see `remove_when_gone`); the pids stopped."""
    try:
        parent = psutil.Process(pid)
        if abs(parent.create_time() - create_time) > 1e-3:
            return []
    except psutil.NoSuchProcess:
        return []
    me = os.getpid()
    seen: dict[tuple[int, float], psutil.Process] = {}
    inbox = _Inbox(scratch_fd) if scratch_fd is not None else None
    while _alive(parent):
        try:
            for child in parent.children(recursive=True):
                if child.pid != me:
                    seen.setdefault((child.pid, child.create_time()), child)
        except psutil.NoSuchProcess:
            break
        if inbox is None:
            time.sleep(POLL_SECONDS)
        else:
            inbox.wait(POLL_SECONDS)
    stopped = stop(list(seen.values()))
    if inbox is not None:
        while inbox.wait(0):
            pass
        for path in inbox.paths:
            shutil.rmtree(path, ignore_errors=True)
    return stopped


if __name__ == "__main__":
    supervise(int(sys.argv[1]), float(sys.argv[2]), sys.stdin.fileno())
