"""The Ctrl-C guard of restore in-process: the first Ctrl-C raises inside `allowed()`, later
ones wait, and outside the main thread nothing changes. `signal.raise_signal` delivers a real
SIGINT (on Windows, the C runtime's raise(SIGINT), which CTRL_C_EVENT also ends in)."""

from __future__ import annotations

import signal
import sys
import threading
import time

import pytest

from undostore import Workspace
from undostore.errors import Interrupted
from undostore.restore.interrupts import InterruptGuard

from .stall import stall_at
from .test_restore_support import disk_state, temp_files


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


def _interrupt_main_thread() -> None:
    """A real SIGINT for the main thread: the C-level handler runs (on Windows it also wakes a
    sleeping main thread, as Ctrl-C does)."""
    if sys.platform == "win32":
        signal.raise_signal(signal.SIGINT)
    else:
        signal.pthread_kill(threading.main_thread().ident, signal.SIGINT)


def test_a_sigint_in_the_middle_of_a_restore_rolls_it_back_in_process(tree_factory, tmp_path,
                                                                      monkeypatch):
    root = tree_factory({"d": {f"f{i}": f"A{i}" for i in range(30)}, "gone": "only A"})
    ws = Workspace(root)
    snap_a = ws.snapshot().id
    for i in range(0, 30, 2):
        (root / "d" / f"f{i}").write_text(f"B{i}" * 5)
    (root / "gone").unlink()
    (root / "new").write_text("only B")
    ws.snapshot()
    before = disk_state(root)
    marker = tmp_path / "stalled"
    ws.checkpoint = stall_at(12, str(marker))   # the restore waits at its 12th step

    def interrupt_when_stalled() -> None:
        deadline = time.monotonic() + 60
        while not marker.exists() and time.monotonic() < deadline:
            time.sleep(0.01)
        _interrupt_main_thread()

    helper = threading.Thread(target=interrupt_when_stalled)
    helper.start()
    try:
        with pytest.raises(Interrupted) as caught:
            ws.restore(snap_a)
    finally:
        helper.join()
    assert "rolled back" in caught.value.message and "nothing is pending" in caught.value.message
    assert isinstance(caught.value, KeyboardInterrupt)
    assert disk_state(root) == before
    assert ws.pending_restore() is None and temp_files(root) == []
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
