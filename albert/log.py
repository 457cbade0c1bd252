"""Logging set-up shared by every command: one logger per module, third-party noise quiet by default."""

import logging
import os

_NOISY = ("tensorflow", "absl", "apache_beam", "h5py", "urllib3", "google", "jax", "httpx")


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
    for name in _NOISY:
        logging.getLogger(name).setLevel(logging.INFO if verbose else logging.WARNING)
