"""Suite-wide settings and fixtures: the shared corpora (skipped where absent), an isolated Prefect
home, one Prefect server for the session (tests/prefect_session.py), one JAX compilation cache for
every JAX process of the suite, and the backend-free modules that `make test`'s two passes share
(tests/backend_free_pool.py)."""

from __future__ import annotations

import atexit
import contextlib
import os
import shutil
import sys
import tempfile
from pathlib import Path

import absl.logging
import backend_free_pool
import prefect_session
import pytest

# Prefect reads its settings at import: give the whole session its own home and a patient,
# quiet temporary server before any test imports prefect. The home is made once, by the pytest
# process that starts first (xdist's workers inherit it), and removed as that process exits.
if "PREFECT_HOME" not in os.environ:
    os.environ["PREFECT_HOME"] = tempfile.mkdtemp(prefix="albert-test-prefect-")
    atexit.register(shutil.rmtree, os.environ["PREFECT_HOME"], ignore_errors=True)
os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "90")
os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
os.environ.setdefault("PREFECT_LOGGING_LEVEL", "WARNING")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

REPO_ROOT = Path(__file__).resolve().parents[1]

# JAX, in the test processes and every command they start (which inherit the environment): the
# tests' models are tiny, so compiling costs far more than running. XLA skips its optimisation
# passes, and every program compiles once into a cache all processes share (both backends' passes,
# all xdist workers; kept in .pytest_cache for the next run). The cache's size limit turns on
# JAX's file lock, so that a process never reads an entry another is still writing.
os.environ.setdefault("JAX_DISABLE_MOST_OPTIMIZATIONS", "1")
os.environ.setdefault(
    "JAX_COMPILATION_CACHE_DIR", str(REPO_ROOT / ".pytest_cache" / "jax-compilation-cache")
)
os.environ.setdefault("JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS", "0.25")
os.environ.setdefault("JAX_COMPILATION_CACHE_MAX_SIZE", str(4 * 2**30))


class _CurrentStderr:
    """Writes to whatever sys.stderr is at each write; closing it closes nothing."""

    def write(self, text: str) -> int:
        return sys.stderr.write(text)

    def flush(self) -> None:
        sys.stderr.flush()

    def close(self) -> None:
        pass


# absl (Keras' and TensorFlow's logging) keeps, from its import on, a handler on the stream that was
# sys.stderr then: under pytest, the session's capture file. A later logging.config.dictConfig (each
# flow's first import of Prefect) closes every handler, and absl's close closes its stream unless it
# is sys.stderr at that moment; inside a test that captures with capsys it is not, and the session
# lost its stderr ("I/O operation on closed file") wherever the modules' order made that happen.
absl.logging.get_absl_handler().python_handler.setStream(_CurrentStderr())

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
_SESSION: dict[str, Path] = {}


def session_root(factory: pytest.TempPathFactory) -> Path:
    """The session's temporary root, shared by its xdist workers (each has a folder in it)."""
    root = factory.getbasetemp()
    return root.parent if os.environ.get("PYTEST_XDIST_WORKER") else root


@contextlib.contextmanager
def prefect_server():
    """The session's Prefect server (tests/prefect_session.py) as the API of the flows run in this
    process, from the first test that asks until the session ends. Every test keeps its flows'
    cached results in its own run directory, so none sees another's."""
    if not _PREFECT_SERVER._exit_callbacks:
        from prefect.settings import PREFECT_API_URL, temporary_settings

        url = prefect_session.api_url(prefect_session.server_root(_SESSION["root"]))
        _PREFECT_SERVER.enter_context(temporary_settings({PREFECT_API_URL: url}))
    yield


def session_api_url() -> str:
    """The API of the session's Prefect server (`prefect_server`), for the commands a test starts
    (as PREFECT_API_URL): they then start no temporary server of their own (tens of seconds
    each)."""
    with prefect_server():
        from prefect.settings import PREFECT_API_URL

        return PREFECT_API_URL.value()


@pytest.fixture(scope="session", autouse=True)
def _session_root(tmp_path_factory):
    _SESSION["root"] = session_root(tmp_path_factory)
    yield
    _PREFECT_SERVER.close()


def pytest_collection_modifyitems(items):
    """Under `make test`, the backend-free modules after this pass's own tests
    (tests/backend_free_pool.py)."""
    backend_free_pool.pool_order(items)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    """Under `make test`, a backend-free module the other pass claimed is skipped here, before its
    fixtures are built."""
    if backend_free_pool.pooled(item) and not backend_free_pool.claimed_here(item.path):
        pytest.skip("backend-free: run by the other pass of `make test`")


def pytest_sessionfinish(session):
    """The session's Prefect server ends with the session (in xdist's controller, once every
    worker has finished), unless a command around the session shares it (tests/prefect_session)."""
    if not hasattr(session.config, "workerinput") and prefect_session.owns_server():
        prefect_session.stop(session.config._tmp_path_factory.getbasetemp())


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
