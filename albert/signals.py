"""SIGTERM and SIGINT from a command's first instant, before the heavy imports (TensorFlow, JAX,
Keras, Prefect): a command that trains is stopped at any moment with exit 75 and one line, and the
same command resumes it.

Every entry point that trains installs these handlers in its first lines (`install_for_command`,
which does nothing in a process that is not that command, e.g. a test importing the module). Until
the command's body runs (`albert.stage.guarded`, which opens `raising`), a signal ends the process
at once with the line `PROG interrupted: SIGTERM before the first step: nothing to save; ...` and
exit 75 (nothing is written while importing). Inside the body it raises `Interrupted` where the
program is, so that what the body holds (a lock, Prefect's temporary server) is released on the
way out. Once training starts, `model.pretrain.run` takes the signals over
(`model.runtime.preemption.stop_on_signals`: a stop at a step every process agrees on, after a
checkpoint) and gives them back after it.

Imports nothing beyond the standard library and `albert.errors`.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import shlex
import signal
import sys
import threading
from collections.abc import Iterator

from albert.errors import EXIT_INTERRUPTED, Interrupted

SIGNALS = (signal.SIGTERM, signal.SIGINT)
BEFORE_TRAINING = "before the first step: nothing to save"
"""What a signal that comes before a training step interrupts (the `Interrupted` message's end)."""


def nothing_written(command: str) -> str:
    """What a signal interrupts in a command that trains nothing and writes its output whole at
    its end, or nothing (segment, decontaminate, `line check`)."""
    return f"during {command}: nothing was written; a re-run starts again"


class _Command:
    """The command whose signals are handled: its name, what a signal interrupts in it and whether
    its body is running."""

    prog: str | None = None
    stopped = BEFORE_TRAINING
    raising = False
    deferring = 0
    waiting: int | None = None  # a signal that came during a deferred block (see `deferred`)
    noted: int | None = None  # a signal the body has not acted on yet (see `missed`)


def stopped_before_training(number: int) -> Interrupted:
    """The stop of a signal that came before any training step (nothing to save)."""
    return Interrupted(f"{signal.Signals(number).name} {BEFORE_TRAINING}")


def stopping(what: str) -> str:
    """Say what a signal interrupts in this command from now on (the message's end); returns what
    it said before."""
    previous, _Command.stopped = _Command.stopped, what
    return previous


def _handle(number: int, frame=None) -> None:
    if _Command.deferring:
        _Command.waiting = _Command.waiting or number
        return
    stop = Interrupted(f"{signal.Signals(number).name} {_Command.stopped}")
    if _Command.raising:
        _Command.noted = number  # in case the raise is swallowed (e.g. inside a gc callback)
        raise stop
    command = shlex.join([*str(_Command.prog).split(), *sys.argv[1:]])
    sys.stderr.write(f"{_Command.prog} interrupted: {stop}; resume with: {command}\n")
    sys.stderr.flush()
    os._exit(EXIT_INTERRUPTED)  # still importing: nothing to clean up, nothing written


def started_as(module: str, script: str | None = None) -> bool:
    """Is this process the command `python -m MODULE` (or the console script SCRIPT)?"""
    argv = list(getattr(sys, "orig_argv", []))
    as_module = any(a == "-m" and b == module for a, b in itertools.pairwise(argv))
    as_script = script is not None and os.path.basename(sys.argv[0] if sys.argv else "") == script
    return as_module or as_script


def install(prog: str) -> None:
    """Handle SIGTERM and SIGINT for the command `prog` from now on (main thread only)."""
    if threading.current_thread() is not threading.main_thread():
        return
    _Command.prog = prog
    for number in SIGNALS:
        signal.signal(number, _handle)


def install_for_command(module: str, script: str | None = None, prog: str | None = None) -> None:
    """`install` when this process is the command `python -m MODULE` (or SCRIPT); else nothing."""
    if started_as(module, script):
        install(prog or f"python -m {module}")


@contextlib.contextmanager
def raising() -> Iterator[None]:
    """While the command's body runs, a signal raises `Interrupted` where the program is."""
    previous, _Command.raising, _Command.noted = _Command.raising, True, None
    try:
        yield
    finally:
        _Command.raising = previous


@contextlib.contextmanager
def deferred() -> Iterator[None]:
    """A signal during the block (a native library's loading, which a raise in its middle can
    crash or leave half-done) is handled as the block ends, as if it came then. In a thread other
    than the main one, nothing changes: Python runs signal handlers in the main thread only."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    _Command.deferring += 1
    try:
        yield
    finally:
        _Command.deferring -= 1
    if not _Command.deferring and _Command.waiting is not None:
        number, _Command.waiting = _Command.waiting, None
        _handle(number)


def missed() -> int | None:
    """The signal the command's body received and that nothing acted on: a raise that a library
    swallowed (Python only prints `Exception ignored in ...` for one inside a gc callback or a
    `__del__`). Whoever takes the signals over (`model.runtime.preemption.stop_on_signals`) acts on
    it."""
    return _Command.noted if _Command.raising else None
