"""`make test`'s two passes share the backend-free modules (marker `backend_free`: no Keras backend
in the test process), so that neither pass idles while the other still runs: each pass runs its
own tests first, then the backend-free modules (those holding a `slow` test first), each module
whole in the pass that claims it first; the other pass skips it.

A claim is a file named after the module in the pool directory ($ALBERT_TEST_BACKEND_FREE_POOL),
holding the claiming pass's backend: a pass's later tests of that module, or those of a worker that
replaced a crashed one, see the claim is theirs. Without that variable (a pass run alone) nothing is
pooled. `python tests/backend_free_pool.py COMMAND...` runs COMMAND with a pool of its own."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

POOL = "ALBERT_TEST_BACKEND_FREE_POOL"


def pooled(item: pytest.Item) -> bool:
    """Whether `item` is shared with the other pass: a backend-free test, where a pool is given."""
    return bool(os.environ.get(POOL)) and item.get_closest_marker("backend_free") is not None


def pool_order(items: list[pytest.Item]) -> None:
    """Reorder `items` in place: this pass's own tests first, in their order, then the pooled ones,
    the modules holding a `slow` test first (the longest first: the passes then end together)."""
    shared = [item for item in items if pooled(item)]
    slow = {item.path for item in shared if item.get_closest_marker("slow") is not None}
    shared.sort(key=lambda item: item.path not in slow)  # stable: each module's order kept
    items[:] = [item for item in items if not pooled(item)] + shared


def claimed_here(module: Path) -> bool:
    """Whether this pass runs `module`: it claims the module unless the other pass has."""
    backend = os.environ.get("KERAS_BACKEND", "tensorflow")
    claim = Path(os.environ[POOL]) / module.name
    try:
        with open(claim, "x", encoding="utf-8") as record:
            record.write(backend)
        return True
    except FileExistsError:
        return claim.read_text(encoding="utf-8") == backend


def main(command: list[str]) -> int:
    """Run `command` (the two passes) with a pool of its own, removed when it ends."""
    with tempfile.TemporaryDirectory(prefix="albert-test-pool-") as pool:
        return subprocess.call(command, env={**os.environ, POOL: pool})


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
