"""The Ctrl-C guard of restore in-process: the first Ctrl-C raises inside `allowed()`, later
ones wait, and outside the main thread nothing changes. `signal.raise_signal` delivers a real
SIGINT (on Windows, the C runtime's raise(SIGINT), which CTRL_C_EVENT also ends in)."""

from __future__ import annotations

import signal
import threading
import time

import pytest

from undostore.restore.interrupts import InterruptGuard


def test_guard_raises_the_first_ctrl_c_inside_allowed_and_holds_the_next() -> None:
    with InterruptGuard() as guard:
        with pytest.raises(KeyboardInterrupt), guard.allowed():
            signal.raise_signal(signal.SIGINT)
            time.sleep(5)   # not reached: the signal raises
        signal.raise_signal(signal.SIGINT)   # held: the roll-back would run here
        assert guard.pending == 1
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_guard_held_ctrl_c_raises_when_the_allowed_block_begins() -> None:
    with InterruptGuard() as guard:
        signal.raise_signal(signal.SIGINT)
        with pytest.raises(KeyboardInterrupt), guard.allowed():
            pass
        assert guard.pending == 0


def test_guard_outside_the_main_thread_changes_nothing() -> None:
    seen = []

    def run() -> None:
        with InterruptGuard() as guard, guard.allowed():
            seen.append(signal.getsignal(signal.SIGINT))

    thread = threading.Thread(target=run)
    thread.start()
    thread.join()
    assert seen == [signal.default_int_handler]
