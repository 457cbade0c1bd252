"""Logging set-up shared by every command: one logger per module, third-party noise quiet by
default."""

import contextlib
import glob
import importlib.abc
import importlib.machinery
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
    (`quiet_tensorflow`); either way native code is loaded whole (`load_native_code_whole`).
    Call it before anything imports TensorFlow."""
    if verbose:
        os.environ["ALBERT_VERBOSE"] = "1"
        os.environ["TF_CPP_MIN_LOG_LEVEL"] = "0"
    quiet = not verbose and os.environ.get("ALBERT_VERBOSE") != "1" and quiet_tensorflow()
    load_native_code_whole(drop_native_info_lines=quiet)
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


def load_native_code_whole(drop_native_info_lines: bool) -> None:
    """From now on this process loads native code whole: a native extension module's
    initialization and the first `import tensorflow` run with signals deferred to their end
    (`albert.signals.deferred`: a SIGTERM raised in their middle can crash the process, leave a
    half-loaded module, or come out as an ImportError, which pybind11 makes of an error raised in
    the Python code a module's initialization calls, and which a library takes for "not
    installed": Keras' probe of `optree`, whose initialization calls `textwrap.dedent`).
    TensorFlow's import runs, if asked, without the native INFO lines (`_NATIVE_INFO_LINE`;
    everything else it prints then is kept)."""
    for finder in sys.meta_path:
        if isinstance(finder, _WholeNativeLoads):
            finder.drop_native_info_lines = drop_native_info_lines
            return
    sys.meta_path.insert(0, _WholeNativeLoads(drop_native_info_lines))


class _WholeNativeLoads(importlib.abc.MetaPathFinder):
    """Finds every module as the finders after it would (whatever loader they give, e.g. an import
    hook's); the loader of a native extension and TensorFlow's run as `load_native_code_whole`
    says. A library that only probes for a module loads nothing."""

    def __init__(self, drop_native_info_lines: bool) -> None:
        self.drop_native_info_lines = drop_native_info_lines

    def find_spec(self, name, path=None, target=None):
        spec = self._others_spec(name, path, target)
        if spec is None:
            return None
        loader = spec.loader
        if isinstance(loader, importlib.machinery.ExtensionFileLoader):
            loader.create_module = _deferred(loader.create_module)
            loader.exec_module = _deferred(loader.exec_module)
        elif name == "tensorflow" and hasattr(loader, "exec_module"):
            loader.exec_module = _whole(loader.exec_module, self.drop_native_info_lines)
        return spec

    def _others_spec(self, name, path, target):
        """The spec of the first finder after this one that finds `name`."""
        for finder in sys.meta_path[sys.meta_path.index(self) + 1 :]:
            find = getattr(finder, "find_spec", None)
            spec = find(name, path, target) if find is not None else None
            if spec is not None:
                return spec
        return None


def _deferred(load: Callable):
    def deferred_load(*args):
        with signals.deferred():
            return load(*args)

    return deferred_load


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
