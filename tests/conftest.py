"""Suite-wide fixtures: the shared corpora (skipped where absent), an isolated Prefect home and one
temporary Prefect server for the flows run in this process."""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path

import pytest

# Prefect reads its settings at import: give the whole session its own home and a patient,
# quiet temporary server before any test imports prefect.
_PREFECT_HOME = tempfile.mkdtemp(prefix="albert-test-prefect-")
os.environ.setdefault("PREFECT_HOME", _PREFECT_HOME)
os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "90")
os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
os.environ.setdefault("PREFECT_LOGGING_LEVEL", "WARNING")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

REPO_ROOT = Path(__file__).resolve().parents[1]
SHARED_DATA = Path(os.environ.get("ALBERT_SHARED_DATA", REPO_ROOT.parent / "shared" / "data"))


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """`../shared/data` (or $ALBERT_SHARED_DATA); the test is skipped where it is absent."""
    if not SHARED_DATA.is_dir():
        pytest.skip(f"real corpora not available: {SHARED_DATA} does not exist")
    return SHARED_DATA


def shared_path(*parts: str) -> Path:
    """A path inside the shared data, skipping the calling test if it is missing."""
    path = SHARED_DATA.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"real corpora not available: {path} does not exist")
    return path


@pytest.fixture(scope="session")
def keras_backend() -> str:
    """The Keras backend this run uses ('tensorflow' or 'jax', from KERAS_BACKEND)."""
    import keras

    return keras.config.backend()


_PREFECT_SERVER = contextlib.ExitStack()


@contextlib.contextmanager
def prefect_server():
    """Prefect's test harness (a temporary server on a temporary database) for flows run in this
    process: started by the first test that asks, in each session (each xdist worker), and kept
    until the session ends instead of started again per test (tens of seconds each). Every test
    keeps its flows' cached results in its own run directory, so none sees another's."""
    if not _PREFECT_SERVER._exit_callbacks:
        from prefect.testing.utilities import prefect_test_harness

        _PREFECT_SERVER.enter_context(prefect_test_harness(server_startup_timeout=90))
    yield


@pytest.fixture(scope="session", autouse=True)
def _stop_prefect_server():
    yield
    _PREFECT_SERVER.close()


_VERBOSITY = ("ALBERT_VERBOSE", "TF_CPP_MIN_LOG_LEVEL")


@pytest.fixture(autouse=True)
def _verbosity_stays_in_its_test():
    """A command run in-process with --verbose sets ALBERT_VERBOSE and TF_CPP_MIN_LOG_LEVEL=0 for
    its child processes (albert.log.setup_logging): put them back after the test, so that a later
    test's commands on the same worker are not verbose (they printed TensorFlow's load lines)."""
    saved = {name: os.environ.get(name) for name in _VERBOSITY}
    yield
    for name, value in saved.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value
