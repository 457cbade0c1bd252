"""One real Prefect server for a whole test session: `prefect server start` (API only, no services,
on a database of its own), started by the first test of any xdist worker that asks and shared by
every worker and every command the tests start; `stop` ends it with the session. One server where
each worker started its own saves a server start (about 12 CPU-seconds) per worker.

`python tests/prefect_session.py COMMAND...` (what `make test` runs its two passes under) shares one
server between every pytest session COMMAND starts: they find its record in the directory named by
$ALBERT_TEST_PREFECT_SERVER; it starts before COMMAND (booting while the sessions collect, where the
first test that asks waited for it: 12 s of a pass), and it ends with COMMAND, not with a session.
One server for both passes saves a start (17 CPU-seconds) and an idle server's ticking (about 1.5%
of a core)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from filelock import FileLock
from ports import free_port

RECORD = "prefect-server.json"
STARTUP_SECONDS = 90
SHARED = "ALBERT_TEST_PREFECT_SERVER"


def server_root(session_root: Path) -> Path:
    """Where the server's record and files live: the shared directory when a command around the
    sessions provides one ($ALBERT_TEST_PREFECT_SERVER), else the session's temporary root."""
    shared = os.environ.get(SHARED)
    return Path(shared) if shared else session_root


def owns_server() -> bool:
    """Whether a session ends its server (not when one is shared by a command around it)."""
    return not os.environ.get(SHARED)


def api_url(root: Path) -> str:
    """The API of the session's server, whose files live in `root` (the session's temporary root,
    shared by its workers): started if no worker has started it yet; returned once it answers."""
    url = start(root)
    _wait_until_healthy(url, root / "prefect-server" / "server.log")
    return url


def start(root: Path) -> str:
    """Start the server whose files live in `root`, unless it is started already; its API."""
    record = root / RECORD
    with FileLock(str(record) + ".lock"):
        if not record.exists():
            record.write_text(json.dumps(_spawn(root / "prefect-server")))
    return json.loads(record.read_text())["url"]


def stop(root: Path) -> None:
    """End the session's server, if one was started in `root`."""
    record = root / RECORD
    if record.exists():
        try:
            os.killpg(json.loads(record.read_text())["pid"], signal.SIGTERM)
        except ProcessLookupError:
            pass
        record.unlink()


def _spawn(directory: Path) -> dict:
    directory.mkdir(parents=True, exist_ok=True)
    port = free_port()
    env = {
        **os.environ,
        "PREFECT_HOME": str(directory / "home"),
        "PREFECT_SERVER_DATABASE_CONNECTION_URL": f"sqlite+aiosqlite:///{directory / 'db.sqlite'}",
    }
    env.pop("PREFECT_API_URL", None)
    prefect = str(Path(sys.executable).with_name("prefect"))
    with open(directory / "server.log", "wb") as log:
        process = subprocess.Popen(
            [prefect, "server", "start", "--host", "127.0.0.1", "--port", str(port)]
            + ["--no-services", "--no-ui", "--analytics-off", "--log-level", "ERROR"],
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # outlives the worker that started it; `stop` ends the group
        )
    return {"pid": process.pid, "url": f"http://127.0.0.1:{port}/api"}


def _wait_until_healthy(url: str, log: Path) -> None:
    deadline = time.monotonic() + STARTUP_SECONDS
    while True:
        try:
            with urllib.request.urlopen(f"{url}/health", timeout=5) as answer:
                if answer.status == 200:
                    return
        except OSError:
            pass
        if time.monotonic() > deadline:
            tail = log.read_text(errors="replace")[-2000:]
            raise RuntimeError(f"the session's Prefect server at {url} did not answer:\n{tail}")
        time.sleep(0.1)


def main(command: list[str]) -> int:
    """Run `command` with one server for all its pytest sessions; end the server with it."""
    with tempfile.TemporaryDirectory(prefix="albert-test-prefect-server-") as root:
        try:
            start(Path(root))
            return subprocess.call(command, env={**os.environ, SHARED: root})
        finally:
            stop(Path(root))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
