"""Logging set-up shared by every command: one logger per module, third-party noise quiet by
default."""

import contextlib
import glob
import importlib.abc
import importlib.util
import logging
import os
import re
import sys
import tempfile
from collections.abc import Callable, Iterator
from types import ModuleType

from albert import signals

_NOISY = ("tensorflow", "absl", "apache_beam", "h5py", "urllib3", "google", "jax", "httpx")
_LIBRARIES = _NOISY + ("prefect",)

_NATIVE_INFO_LINE = re.compile(
    rb"^(WARNING: All log messages before absl::InitializeLog\(\) is called are written to STDERR"
    rb"|I\d{4} [\d:.]+ +\d+ [\w.]+:\d+\] .*)\r?\n?$"
)
"""What TensorFlow's C++ code prints while it loads, before its log level applies: absl's note that
logging is not set up yet and INFO lines (`oneDNN custom operations are on`, `Could not find cuda
drivers`). Warnings and errors (W..., E..., F...) never match."""


def _no_library_tracebacks(record: logging.LogRecord) -> bool:
    """Drop a library's log record that carries a traceback (Beam logs a failing DoFn's and a
    worker's, Prefect a failed run's): the failure itself is raised and reported in one line;
    --verbose shows them all (and Prefect's own UI keeps its copy)."""
    if not record.name.startswith(_LIBRARIES):
        return True
    return not (
        record.exc_info
        or record.exc_text
        or "Traceback (most recent call last)" in record.getMessage()
    )


def setup_logging(verbose: bool = False) -> None:
    """Configure the root logger; with verbose (or ALBERT_VERBOSE=1, which verbose sets for child
    processes), also let TensorFlow, Beam and friends speak, else keep TensorFlow quiet
    (`quiet_tensorflow`); either way TensorFlow's import is loaded whole (`load_tensorflow_whole`).
    Call it before anything imports TensorFlow."""
    if verbose:
        os.environ["ALBERT_VERBOSE"] = "1"
        os.environ["TF_CPP_MIN_LOG_LEVEL"] = "0"
    quiet = not verbose and os.environ.get("ALBERT_VERBOSE") != "1" and quiet_tensorflow()
    load_tensorflow_whole(drop_native_info_lines=quiet)
    logging.basicConfig(
        level=logging.DEBUG if verbose else logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        datefmt="%H:%M:%S",
        force=True,
    )
    if not verbose:
        for handler in logging.getLogger().handlers:
            handler.addFilter(_no_library_tracebacks)
    for name in _NOISY:
        logging.getLogger(name).setLevel(logging.INFO if verbose else logging.WARNING)


def has_gpu_device() -> bool:
    """Whether this machine has an NVIDIA device node (/dev/nvidia*): a GPU TensorFlow may use."""
    return bool(glob.glob("/dev/nvidia*"))


def quiet_tensorflow() -> bool:
    """Keep TensorFlow's C++ logs to what matters, unless the user set TF_CPP_MIN_LOG_LEVEL; return
    whether the INFO lines it prints while it loads, before that level applies, are to be dropped.

    With a GPU device node: errors only (level 2), so real device errors show. Without one: nothing
    (level 3), which hides the CUDA probe's `failed call to cuInit` error about a GPU that is not
    there. The variable reaches child processes.
    """
    level = os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2" if has_gpu_device() else "3")
    return level.strip() not in ("", "0")


def load_tensorflow_whole(drop_native_info_lines: bool) -> None:
    """From now on this process's first `import tensorflow` runs with signals deferred to its end
    (`albert.signals.deferred`: a SIGTERM raised inside TensorFlow's native loading can crash the
    process or leave a half-loaded module) and, if asked, without the native INFO lines
    (`_NATIVE_INFO_LINE`; everything else it prints then is kept)."""
    if "tensorflow" in sys.modules:
        return
    for finder in sys.meta_path:
        if isinstance(finder, _WholeTensorFlowLoad):
            finder.drop_native_info_lines = drop_native_info_lines
            return
    sys.meta_path.insert(0, _WholeTensorFlowLoad(drop_native_info_lines))


class _WholeTensorFlowLoad(importlib.abc.MetaPathFinder):
    """Finds `tensorflow` as the other finders would (whatever loader they give, e.g. an import
    hook's), its loader's `exec_module` run as `load_tensorflow_whole` says. A library that only
    probes for it loads nothing."""

    def __init__(self, drop_native_info_lines: bool) -> None:
        self.drop_native_info_lines = drop_native_info_lines
        self._finding = False

    def find_spec(self, name, path=None, target=None):
        if name != "tensorflow" or self._finding:
            return None
        self._finding = True
        try:
            spec = importlib.util.find_spec(name)
        finally:
            self._finding = False
        if spec is not None and hasattr(spec.loader, "exec_module"):
            # this spec's own loader
            spec.loader.exec_module = _whole(spec.loader.exec_module, self.drop_native_info_lines)
        return spec


def _whole(
    exec_module: Callable[[ModuleType], None], drop_native_info_lines: bool
) -> Callable[[ModuleType], None]:
    def whole_exec_module(module: ModuleType) -> None:
        quiet = _without_native_info_lines() if drop_native_info_lines else contextlib.nullcontext()
        with signals.deferred(), quiet:
            exec_module(module)

    return whole_exec_module


@contextlib.contextmanager
def _without_native_info_lines() -> Iterator[None]:
    """Run the block with file descriptor 2 (native code's stderr) going to a temporary file, then
    write all of it back but the lines `_NATIVE_INFO_LINE` matches."""
    sys.stderr.flush()
    saved = os.dup(2)
    try:
        with tempfile.TemporaryFile() as captured:
            os.dup2(captured.fileno(), 2)
            try:
                yield
            finally:
                sys.stderr.flush()
                os.dup2(saved, 2)
                captured.seek(0)
                kept = memoryview(
                    b"".join(line for line in captured if not _NATIVE_INFO_LINE.match(line))
                )
                while kept:
                    kept = kept[os.write(2, kept) :]
    finally:
        os.close(saved)
