"""One writer per output: a lock file `<output>.lock` beside the output naming its holder.

On a local or network disk the lock is an `flock` on that file, which the kernel releases when the
holder dies, however it dies (SIGKILL included); the file names the holder (pid, host, start time)
for the error a second writer gets. Object stores have no locks: there the lock object is created
only if absent (a conditional write), carries a heartbeat that the holder refreshes, and counts as
stale once its heartbeat is older than `STALE_SECONDS` (or at once when its holder is a dead process
on this host). A lock is re-entrant within one thread: a stage may lock an output that the task
calling it already holds."""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import logging
import os
import socket
import threading
import time
import uuid
from collections.abc import Iterator
from typing import Any

import psutil

from albert.errors import StageError, naming_writes
from albert.fs import filesystem, is_local, makedirs

logger = logging.getLogger(__name__)

LOCK_SUFFIX = ".lock"
HEARTBEAT_SECONDS = 30.0
STALE_SECONDS = 300.0

_held: dict[
    str, tuple[int, int]
] = {}  # lock url -> (thread id, depth) of the locks this process holds
_held_guard = threading.Lock()
_tokens: set[str] = set()  # tokens of the object-store locks this process holds


class OutputBusyError(StageError):
    """The output is being written by another live run."""


def lock_url(output: str) -> str:
    return output.rstrip("/") + LOCK_SUFFIX


def holder_info() -> dict[str, Any]:
    """Who this process is: pid, host, start time (what a lock file records)."""
    now = time.time()
    return {
        "pid": os.getpid(),
        "host": socket.gethostname(),
        "started": now,
        "heartbeat": now,
        "token": uuid.uuid4().hex,
    }


def describe(holder: dict[str, Any]) -> str:
    started = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(float(holder.get("started", 0))))
    return f"pid {holder.get('pid')} on {holder.get('host')}, started {started}"


def holder_is_dead(holder: dict[str, Any], now: float | None = None) -> bool:
    """A lock's holder is gone: a dead (or since reused) pid on this host, or a heartbeat too
    old."""
    if holder.get("host") == socket.gethostname():
        # ours, unless this process holds it now (a failed release)
        if holder.get("pid") == os.getpid():
            return holder.get("token") not in _tokens
        try:
            process = psutil.Process(int(holder["pid"]))
            return (
                process.create_time() > float(holder["started"]) + 1.0
            )  # pid reused by a newer process
        except (psutil.NoSuchProcess, KeyError, ValueError):
            return True
    return (now or time.time()) - float(holder.get("heartbeat", 0)) > STALE_SECONDS


def _busy(output: str, holder: dict[str, Any]) -> OutputBusyError:
    return OutputBusyError(
        f"{output} is being written by another run ({describe(holder)}); wait for it to finish, "
        f"or use another output directory"
    )


@contextlib.contextmanager
def _local_lock(output: str, path: str) -> Iterator[None]:
    makedirs(os.path.dirname(os.path.abspath(path)))
    while True:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as error:
            os.close(fd)
            if error.errno not in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                raise
            raise _busy(output, _read_local(path)) from None
        try:
            same = os.fstat(fd).st_ino == os.stat(path).st_ino
        except FileNotFoundError:
            same = False
        if same:  # not a file its previous holder unlinked while we waited for it
            break
        os.close(fd)
    try:
        with naming_writes(path):  # a full disk names the lock file
            os.ftruncate(fd, 0)
            os.pwrite(fd, json.dumps(holder_info()).encode(), 0)
        yield
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)
        os.close(fd)


def _read_local(path: str) -> dict[str, Any]:
    try:
        with open(path, encoding="utf-8") as handle:
            return json.loads(handle.read() or "{}")
    except (OSError, ValueError):
        return {}


@contextlib.contextmanager
def _object_store_lock(output: str, url: str) -> Iterator[None]:
    fs, path = filesystem(url)
    me = holder_info()
    for _attempt in range(2):
        try:
            with fs.open(path, "xb") as handle:  # created only if absent (GCS: ifGenerationMatch=0)
                handle.write(json.dumps(me).encode())
            break
        except FileExistsError:
            holder = _read_object(fs, path)
            if holder and not holder_is_dead(holder):
                raise _busy(output, holder) from None
            logger.warning(
                "%s: removing the stale lock of a dead run (%s)", output, describe(holder or {})
            )
            with contextlib.suppress(FileNotFoundError):
                fs.rm(path)
    else:
        raise _busy(output, _read_object(fs, path) or {})
    _tokens.add(me["token"])
    stop = threading.Event()

    def beat() -> None:
        while not stop.wait(HEARTBEAT_SECONDS):
            # a missed beat only ages the lock; the next one renews it
            with contextlib.suppress(Exception):
                fs.pipe(path, json.dumps(dict(me, heartbeat=time.time())).encode())

    thread = threading.Thread(target=beat, name=f"lock-heartbeat {output}", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()
        _tokens.discard(me["token"])
        with contextlib.suppress(FileNotFoundError):
            if (_read_object(fs, path) or {}).get("token") == me["token"]:
                fs.rm(path)


def _read_object(fs, path: str) -> dict[str, Any] | None:
    try:
        return json.loads(fs.cat(path) or b"{}")
    except (FileNotFoundError, ValueError):
        return None


@contextlib.contextmanager
def output_lock(output: str) -> Iterator[None]:
    """Hold `<output>.lock` while writing `output`; OutputBusyError (naming the holder) if a live
    run has it."""
    url = lock_url(output)
    me = threading.get_ident()
    with _held_guard:
        thread, depth = _held.get(url, (me, 0))
        if depth and thread == me:
            _held[url] = (me, depth + 1)
            nested = True
        else:
            nested = False
    if nested:
        try:
            yield
        finally:
            with _held_guard:
                _held[url] = (me, _held[url][1] - 1)
        return
    path = filesystem(url)[1]
    acquire = _local_lock(output, path) if is_local(url) else _object_store_lock(output, url)
    with acquire:
        with _held_guard:
            _held[url] = (me, 1)
        try:
            yield
        finally:
            with _held_guard:
                _held.pop(url, None)
