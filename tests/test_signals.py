"""The first-instant handlers' two safety nets (`albert.signals`), with real signals in this
process: a signal inside a deferred block (TensorFlow's native loading) acts as the block ends, and
one whose raise a library swallowed is acted on when training takes the signals over."""

from __future__ import annotations

import os
import signal
import time

import pytest

from albert import signals
from albert.errors import Interrupted
from model.preemption import stop_on_signals


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
