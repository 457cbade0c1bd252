"""The first-instant handlers' two safety nets (`albert.signals`), with real signals in this
process: a signal inside a deferred block (TensorFlow's native loading, a native module's
initialization) acts as the block ends, and one whose raise a library swallowed is acted on when
training takes the signals over."""

from __future__ import annotations

import _imp
import importlib
import os
import signal
import sys
import threading
import time
from importlib.util import find_spec

import pytest

from albert import signals
from albert.errors import Interrupted
from albert.log import load_native_code_whole
from model.runtime.preemption import stop_on_signals

pytestmark = pytest.mark.backend_free


@pytest.fixture
def handlers():
    """The command's handlers installed in this (main) thread, before any training step (an
    earlier in-process fine-tuning run in this session said otherwise); the previous ones restored
    after."""
    previous = {number: signal.getsignal(number) for number in signals.SIGNALS}
    signals.install("python -m model.pretrain")
    signals.stopping(signals.BEFORE_TRAINING)
    yield
    for number, handler in previous.items():
        signal.signal(number, handler)


def _signal_self() -> None:
    os.kill(os.getpid(), signal.SIGTERM)
    time.sleep(0.05)  # Python runs the handler at the next bytecode boundary


def test_a_signal_in_a_deferred_block_is_raised_as_the_block_ends(handlers):
    finished = False
    stop = pytest.raises(Interrupted, match="SIGTERM before the first step")
    with signals.raising(), stop, signals.deferred():
        _signal_self()
        finished = True
    assert finished


def test_a_block_deferred_in_another_thread_does_not_hold_a_signal_back(handlers):
    """A thread's native load (a Grain worker thread's import, say) defers nothing: the handler
    runs in the main thread, which acts at once."""
    inside, done = threading.Event(), threading.Event()

    def load() -> None:
        with signals.deferred():
            inside.set()
            done.wait(10)

    thread = threading.Thread(target=load)
    thread.start()
    inside.wait(10)
    try:
        with signals.raising(), pytest.raises(Interrupted, match="SIGTERM before the first step"):
            _signal_self()
    finally:
        done.set()
        thread.join()


def test_a_swallowed_raise_is_acted_on_when_training_takes_the_signals_over(handlers):
    with signals.raising():
        try:
            _signal_self()
        except Interrupted:
            pass  # what Python does with a raise inside a gc callback
        assert signals.missed() == signal.SIGTERM
        stop = pytest.raises(Interrupted, match="SIGTERM before the first step")
        with stop, stop_on_signals("one"):
            pytest.fail("training started after a signal")
    with signals.raising():
        assert signals.missed() is None


NATIVE_MODULES = ("xxlimited", "xxlimited_35", "_testbuffer", "_xxtestfuzz")
"""CPython's own example and test extensions: native modules nothing here imports."""


def test_a_signal_during_a_native_modules_initialization_acts_at_its_end(handlers):
    """pybind11 turns an error raised in the Python code a module's initialization calls into an
    ImportError, which a library takes for "not installed" (Keras' probe of `optree`: `albert
    finetune` failed with "To use Keras, you need to have `optree` installed" under a SIGTERM): a
    signal that comes while a native module initializes acts once the initialization has ended
    (`albert.log.load_native_code_whole`)."""
    load_native_code_whole(drop_native_info_lines=False)
    name = next((n for n in NATIVE_MODULES if n not in sys.modules and find_spec(n)), None)
    if name is None:
        pytest.skip(f"none of CPython's example extensions is here: {NATIVE_MODULES}")
    initialized = []

    def signal_as_it_starts(frame, event, function):  # sys.setprofile's hook
        if function is _imp.create_dynamic and event == "c_call":
            os.kill(os.getpid(), signal.SIGTERM)
        elif function is _imp.create_dynamic and event == "c_return":
            initialized.append(name)

    sys.setprofile(signal_as_it_starts)
    try:
        with signals.raising(), pytest.raises(Interrupted, match="SIGTERM before the first step"):
            importlib.import_module(name)
    finally:
        sys.setprofile(None)
    assert initialized == [name] and name not in sys.modules


@pytest.mark.parametrize(
    "argv, stub",
    [
        (["segment", "--input", "in.txt", "--output", "o"], "pipelines.segment.stage.run"),
        (["decontaminate", "--corpus", "c", "--eval", "e.txt", "--output", "o"], None),
        (["line", "check", "L"], "flows.line.cli.check"),
    ],
    ids=["segment", "decontaminate", "line-check"],
)
def test_a_command_that_trains_nothing_says_that_nothing_was_written(
    handlers, monkeypatch, capsys, argv, stub
):
    """Issue 67: segment, decontaminate and `line check` said training's "before the first step:
    nothing to save"."""
    from albert import cli

    stub = stub or "pipelines.decontaminate.stage.run"
    module, name = stub.rsplit(".", 1)
    monkeypatch.setattr(importlib.import_module(module), name, lambda *args: _signal_self())
    assert cli.main(argv) == 75
    (line,) = [s for s in capsys.readouterr().err.splitlines() if "interrupted:" in s]
    command = " ".join(["albert", *argv[:2]] if argv[0] == "line" else ["albert", argv[0]])
    said = f"albert {argv[0]} interrupted: SIGTERM during {command}: nothing was written; a re-run"
    assert said in line
    assert "nothing to save" not in line
    assert signals._Command.stopped == signals.BEFORE_TRAINING  # training's wording after it
