"""Python's global `random` for the calling thread alone, for a stretch of a test that must see the
generator change only by its own draws.

A pytest worker is not a quiet process: the Prefect clients of its earlier tests live on in threads,
and their websocket pings draw from the global `random` (tests/test_keras_seeds.py; Hypothesis
warns when the generator moves while it draws an example). Inside `random_for_this_thread_alone()`
the module's functions serve the calling thread from the shared generator, as before; any other
thread draws from a generator of its own."""

from __future__ import annotations

import random
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager


@contextmanager
def random_for_this_thread_alone() -> Iterator[None]:
    me, theirs = threading.get_ident(), random.Random()
    shared = {
        name: function
        for name in dir(random)
        if getattr(function := getattr(random, name), "__self__", None) is random._inst
    }

    def for_this_thread_alone(name: str, function: Callable) -> Callable:
        def draw(*args, **kwargs):
            if threading.get_ident() == me:
                return function(*args, **kwargs)
            return getattr(theirs, name)(*args, **kwargs)

        return draw

    for name, function in shared.items():
        setattr(random, name, for_this_thread_alone(name, function))
    try:
        yield
    finally:
        for name, function in shared.items():
            setattr(random, name, function)
