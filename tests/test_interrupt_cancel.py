"""Cancelling a restore in-process: a host sets `Workspace.cancel` from another thread, and the
restore stops at its next file operation and rolls back; the library itself installs no signal
handler and leaves the garbage collector alone. A host that installs no handler at all still
gets a KeyboardInterrupt rolled back (a real SIGINT for the main thread)."""

from __future__ import annotations

import gc
import signal
import sys
import threading
import time

import pytest

from undostore import Workspace
from undostore.errors import Interrupted

from .restore_support import disk_state, temp_files
from .stall import stall_at


def _two_states(tree_factory):
    """A root at state B, snapshotted at A before: (workspace, id A, the files at B)."""
    root = tree_factory({"d": {f"f{i}": f"A{i}" for i in range(30)}, "gone": "only A"})
    ws = Workspace(root)
    snap_a = ws.snapshot().id
    for i in range(0, 30, 2):
        (root / "d" / f"f{i}").write_text(f"B{i}" * 5)
    (root / "gone").unlink()
    (root / "new").write_text("only B")
    ws.snapshot()
    return ws, snap_a, disk_state(root)


def _when_stalled(marker, then) -> threading.Thread:
    def wait() -> None:
        deadline = time.monotonic() + 60
        while not marker.exists() and time.monotonic() < deadline:
            time.sleep(0.01)
        then()

    helper = threading.Thread(target=wait)
    helper.start()
    return helper


def test_a_cancel_from_another_thread_rolls_the_restore_back(tree_factory, tmp_path):
    ws, snap_a, before = _two_states(tree_factory)
    marker = tmp_path / "stalled"
    seen = []
    stall = stall_at(12, str(marker), ws.cancel.is_set)

    def checkpoint(what: str, path: str) -> None:
        seen.append((signal.getsignal(signal.SIGINT), gc.isenabled()))
        stall(what, path)

    ws.checkpoint = checkpoint
    helper = _when_stalled(marker, ws.cancel.set)
    try:
        with pytest.raises(Interrupted) as caught:
            ws.restore(snap_a)
    finally:
        helper.join()
    assert "rolled back" in caught.value.message and "nothing is pending" in caught.value.message
    assert disk_state(ws.root) == before
    assert ws.pending_restore() is None and temp_files(ws.root) == []
    assert set(seen) == {(signal.default_int_handler, True)}   # no handler, gc left on


def test_a_cancel_before_any_change_stops_the_restore_with_nothing_changed(tree_factory):
    ws, snap_a, before = _two_states(tree_factory)

    def confirm(plan: object) -> bool:
        ws.cancel.set()   # e.g. the user pressed Ctrl-C while the plan was shown
        return True

    with pytest.raises(Interrupted, match="nothing was changed"):
        ws.restore(snap_a, confirm=confirm)
    assert disk_state(ws.root) == before and ws.pending_restore() is None
    ws.cancel.clear()
    ws.restore(snap_a)   # the request was answered: the next restore runs


def test_a_snapshot_leaves_the_garbage_collector_on(tree_factory):
    root = tree_factory({f"d{i}": {f"f{j}": f"{i} {j}" for j in range(50)} for i in range(20)})
    collections = []

    def count(phase: str, info: dict) -> None:
        collections.append(phase)

    gc.callbacks.append(count)
    try:
        with Workspace(root) as ws:
            ws.snapshot()
    finally:
        gc.callbacks.remove(count)
    assert collections and gc.isenabled()


def _interrupt_main_thread() -> None:
    """A real SIGINT for the main thread: the C-level handler runs (on Windows it also wakes a
    sleeping main thread, as Ctrl-C does)."""
    if sys.platform == "win32":
        signal.raise_signal(signal.SIGINT)
    else:
        signal.pthread_kill(threading.main_thread().ident, signal.SIGINT)


def test_a_sigint_with_no_handler_installed_still_rolls_the_restore_back(tree_factory,
                                                                          tmp_path):
    ws, snap_a, before = _two_states(tree_factory)
    marker = tmp_path / "stalled"
    ws.checkpoint = stall_at(12, str(marker))   # waits until the KeyboardInterrupt raises
    helper = _when_stalled(marker, _interrupt_main_thread)
    try:
        with pytest.raises(Interrupted) as caught:
            ws.restore(snap_a)
    finally:
        helper.join()
    assert "rolled back" in caught.value.message and "nothing is pending" in caught.value.message
    assert isinstance(caught.value, KeyboardInterrupt)
    assert disk_state(ws.root) == before
    assert ws.pending_restore() is None and temp_files(ws.root) == []
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
