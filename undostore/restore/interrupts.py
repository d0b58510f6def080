"""Ctrl-C around the part of a restore that changes files: raise once, then hold until safe.

    with InterruptGuard() as guard:    # from here a Ctrl-C is recorded, not raised
        write_journal(...)
        with guard.allowed():           # here the first Ctrl-C raises KeyboardInterrupt ...
            checkout.run()
        ...                             # ... and every later one is recorded again
        if guard.pending: roll back

So a Ctrl-C stops the file writes at once, while the journal write before them and the roll-back
after them cannot be cut short by a second one. Python runs signal handlers in the main thread
only, and a handler can be installed only there: elsewhere the guard changes nothing. On Windows,
Ctrl-C (CTRL_C_EVENT) reaches the same SIGINT handler.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType, TracebackType
from typing import Any


class InterruptGuard:
    """Holds SIGINT for the duration of a `with` block, except inside `allowed()`."""

    def __init__(self) -> None:
        self.pending = 0          # Ctrl-Cs recorded while held
        self._raising = False
        self._previous: Any = None
        self._installed = False

    def __enter__(self) -> InterruptGuard:
        if threading.current_thread() is threading.main_thread():
            try:
                self._previous = signal.signal(signal.SIGINT, self._handle)
                self._installed = True
            except (ValueError, OSError):   # an embedding interpreter may refuse
                self._installed = False
        return self

    def __exit__(self, kind: type[BaseException] | None, err: BaseException | None,
                 tb: TracebackType | None) -> None:
        if self._installed:
            # None: the handler before was not set from Python; the default is all we can give.
            previous = self._previous if self._previous is not None else signal.SIG_DFL
            signal.signal(signal.SIGINT, previous)
            self._installed = False

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        if self._raising:
            self._raising = False   # the next one is held: the roll-back must not be cut short
            raise KeyboardInterrupt
        self.pending += 1

    @contextmanager
    def allowed(self) -> Iterator[None]:
        """Let the first Ctrl-C raise KeyboardInterrupt inside this block (one recorded while
        held raises it on entry)."""
        if self.pending:
            self.pending = 0
            raise KeyboardInterrupt
        self._raising = True
        try:
            yield
        finally:
            self._raising = False
