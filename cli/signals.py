"""SIGINT and SIGTERM as a cancel request: the program's choice, never the library's.

A signal sets the process's cancel request. While a restore answers it itself (`watched`: from its
journal write to the end of its roll-back), that is all: the restore stops at its next file
operation, rolls back and raises Interrupted. At any other moment nothing is half-changed, and
the signal also raises KeyboardInterrupt where it lands, as Python's own SIGINT handler would (a
snapshot removes its temp files on the way out; a restore on another thread, as in the MCP
server, stops before its journal). Either way the command exits 130.
"""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from undostore.restore.cancel import Cancel

_cancel: Cancel | None = None


def process_cancel() -> Cancel:
    """The one request of this process, handed to every workspace it opens (made on first use:
    importing the library costs start-up time `--help` need not pay)."""
    global _cancel
    if _cancel is None:
        from undostore import Cancel

        _cancel = Cancel()
    return _cancel


def _handle(signum: int, frame: FrameType | None) -> None:
    cancel = _cancel
    if cancel is None:
        raise KeyboardInterrupt
    cancel.set()
    if not cancel.watched:
        raise KeyboardInterrupt


def fork_alone() -> int | None:
    """`os.fork`, for the library's second walk process (snapshot/lstatsplit.py), where this
    process may fork: the system has it and no other thread runs (a fork copies the calling
    thread alone; a lock another thread held would stay held in the child). None: not now.
    The child takes the signals' defaults: a Ctrl-C or a SIGTERM ends it at once (it only
    reads, and holds nothing to roll back)."""
    if not hasattr(os, "fork") or threading.active_count() > 1:
        return None
    pid = os.fork()
    if pid == 0:
        for number in _signals():
            signal.signal(number, signal.SIG_DFL)
    return pid


def _signals() -> list[signal.Signals]:
    return [signal.SIGINT, signal.SIGTERM]


@contextmanager
def cancel_on_signals() -> Iterator[Cancel]:
    """Within the block, SIGINT and SIGTERM are handled as above (main thread only: Python
    runs handlers nowhere else); the handlers before are put back after it."""
    cancel = process_cancel()
    previous: list[tuple[signal.Signals, object]] = []
    if threading.current_thread() is threading.main_thread():
        for number in _signals():
            try:
                previous.append((number, signal.signal(number, _handle)))
            except (ValueError, OSError):   # an embedding interpreter may refuse
                pass
    try:
        yield cancel
    finally:
        for number, handler in previous:
            signal.signal(number, handler if handler is not None else signal.SIG_DFL)
