"""A run's input whose worker count changes while it runs: the batches stay the same.

The training batches depend on (seed, epoch, batch in epoch) only, for any number of workers
(`model.input.grain`), so a stream can be closed and opened again at the position of its next batch
with another number of workers, and the loop receives exactly the items it would have. That lets a
run start its input at once (no worker processes to start) and size its workers once the step's
time is measured (`model.runtime.cores.workers_for`).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterable, Iterator


class RetunedBatches:
    """An iterator over a run's (epoch, batch in epoch, batch) items from
    `open_stream(workers, epoch, skip)` (a context manager of such an iterator, from batch `skip` of
    `epoch` on), started with `workers`. `retune(n)` asks for n workers: the next item is then read
    from a stream opened at that item's own position with n (once read, the old stream's copy is
    dropped). Only the thread that iterates opens and closes streams. A context manager: the stream
    open is closed when the block ends."""

    def __init__(self, open_stream: Callable, workers: int, epoch: int, skip: int):
        self._open_stream, self.workers, self._wanted = open_stream, workers, None
        self._held = contextlib.ExitStack()
        self._items = self._held.enter_context(open_stream(workers, epoch, skip))

    def retune(self, workers: int) -> None:
        """Ask for `workers` from the next item on (no effect when it is the count running)."""
        self._wanted = workers

    def __iter__(self):
        return self

    def __next__(self):
        item = next(self._items)
        wanted, self._wanted = self._wanted, None
        if wanted is None or wanted == self.workers:
            return item
        epoch, index, _ = item
        self._held.close()
        self._held = contextlib.ExitStack()
        self._items = self._held.enter_context(self._open_stream(wanted, epoch, index))
        self.workers = wanted
        return next(self._items)

    def close(self) -> None:
        self._held.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def seconds_per_item(items: Iterable, count: int) -> float:
    """The mean seconds `items` takes to deliver each of its `count` items after the first (whose
    wait includes starting); 0.0 when it ends first."""
    iterator: Iterator = iter(items)
    if next(iterator, None) is None:
        return 0.0
    start, taken = time.perf_counter(), 0
    for _ in range(count):
        if next(iterator, None) is None:
            break
        taken += 1
    return (time.perf_counter() - start) / taken if taken else 0.0
