"""Logging set-up shared by every command: one logger per module, third-party noise quiet by default."""

import logging
import os

_NOISY = ("tensorflow", "absl", "apache_beam", "h5py", "urllib3", "google", "jax", "httpx")
_LIBRARIES = _NOISY + ("prefect",)


def _no_library_tracebacks(record: logging.LogRecord) -> bool:
    """Drop a library's log record that carries a traceback (Beam logs a failing DoFn's and a worker's,
    Prefect a failed run's): the failure itself is raised and reported in one line; --verbose shows
    them all (and Prefect's own UI keeps its copy)."""
    if not record.name.startswith(_LIBRARIES):
        return True
    return not (record.exc_info or record.exc_text or "Traceback (most recent call last)" in record.getMessage())


def setup_logging(verbose: bool = False) -> None:
    """Configure the root logger; with verbose, also let TensorFlow, Beam and friends speak."""
    if verbose:
        os.environ["ALBERT_VERBOSE"] = "1"
        os.environ["TF_CPP_MIN_LOG_LEVEL"] = "0"
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
