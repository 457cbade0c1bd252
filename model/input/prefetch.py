"""Device prefetch: the training batches placed on the devices ahead of the step that takes them.

`DevicePrefetch` reads a run's (epoch, batch in epoch, batch) items in a thread of its own, places
each batch (`place`: the JAX engine's `device_put` with the distribution's sharding; the transfer is
asynchronous) and keeps up to `depth` of them (two: double buffering) in a queue. While the step
runs on the devices, the next batch is prepared and transferred; the training loop's wait for a
batch (the trainer's `input_wait`) is then the time that queue was empty.

What the loop receives is what it would without prefetch, in the same order: (epoch, batch in
epoch, `Placed`), so the position a checkpoint records is that of the batches trained, and the
batches read ahead are dropped with the prefetch (a resume reads them again from that position).
The input's own error reaches the loop at its batch, as the batch would have; the end of the input
ends the iteration. `close` stops the thread (a batch it is reading is finished first) before the
caller closes the input under it: the input is only ever read by one thread at a time.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Iterable
from typing import NamedTuple

import numpy as np

DEPTH = 2  # batches placed ahead of the step: one being transferred while one waits
_POLL_SECONDS = 0.05  # how often a thread blocked on a full queue looks for `close`


class Placed(NamedTuple):
    """A batch as the step takes it (`arrays`, on the devices) with its host rows' counts
    (`token_counts`)."""

    arrays: dict
    real_tokens: int
    tokens: int
    instances: int = 0


def _readable(array) -> bool:
    return isinstance(array, np.ndarray) or hasattr(array, "numpy")


def token_counts(batch) -> tuple[int, int, int]:
    """(real tokens, all tokens, instances) of a batch's `input_mask` and `instance_ids` (this
    process's rows): a packed row's instances are its largest instance id (they are numbered 1..k),
    an unpacked row is one. (0, 0, 0) where it has no mask readable without a device transfer (a
    `Placed` batch carries its counts)."""
    if isinstance(batch, Placed):
        return batch.real_tokens, batch.tokens, batch.instances
    mask = batch.get("input_mask") if isinstance(batch, dict) else None
    if mask is None or not _readable(mask):
        return 0, 0, 0
    mask = np.asarray(mask)
    ids = batch.get("instance_ids")
    if ids is None or not _readable(ids):
        instances = mask.shape[0]
    else:
        instances = int(np.asarray(ids).max(axis=-1).sum())
    return int(np.count_nonzero(mask)), mask.size, instances


class _Failed(NamedTuple):
    error: BaseException


_END = object()


class DevicePrefetch:
    """An iterator over `items` (epoch, index, batch) as (epoch, index, `Placed`), `depth` batches
    placed ahead in a thread; a context manager that closes it (see the module doc)."""

    def __init__(self, items: Iterable, place: Callable[[dict], dict], depth: int = DEPTH):
        if depth < 1:
            raise ValueError(f"depth {depth}: at least one batch is placed ahead")
        self._queue: queue.Queue = queue.Queue(maxsize=depth)
        self._stop = threading.Event()
        self._ended = False
        self._thread = threading.Thread(
            target=self._fill, args=(iter(items), place), name="device-prefetch", daemon=True
        )
        self._thread.start()

    def _fill(self, items, place) -> None:
        try:
            for epoch, index, batch in items:
                counts = token_counts(batch)
                if not self._put((epoch, index, Placed(place(batch), *counts))):
                    return
        except BaseException as error:  # noqa: BLE001  (the loop raises it at this batch)
            self._put(_Failed(error))
            return
        self._put(_END)

    def _put(self, item) -> bool:
        """Queue `item` once there is room; False when closed first."""
        while not self._stop.is_set():
            try:
                self._queue.put(item, timeout=_POLL_SECONDS)
                return True
            except queue.Full:
                continue
        return False

    def __iter__(self):
        return self

    def __next__(self):
        if self._ended:
            raise StopIteration
        item = self._queue.get()
        if item is _END or isinstance(item, _Failed):
            self._ended = True
            if item is _END:
                raise StopIteration
            raise item.error
        return item

    def close(self) -> None:
        """Stop the thread and drop the batches placed ahead; the input it read is the caller's to
        close, after this."""
        self._stop.set()
        self._thread.join()
        self._ended = True
        while not self._queue.empty():
            self._queue.get_nowait()

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()
