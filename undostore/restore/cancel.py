"""A request to stop a restore, made by whoever decides to stop it: the CLI's or the MCP server's
SIGINT/SIGTERM handler, or an embedding host's other thread. The library installs no signal
handler and never stops asynchronously: a restore checks the request between its steps and at
each file operation, rolls back what it changed and raises `Interrupted`.

    cancel = Cancel()
    ws.cancel = cancel          # then, from any thread or a signal handler: cancel.set()

`watched` is true while a restore is between its journal write and the end of its roll-back,
where it answers the request itself; a signal handler that finds it false may stop the program
its own way (KeyboardInterrupt), since no file is half-changed then.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager


class Cancelled(BaseException):
    """Raised inside the restore at the check that saw the request; never leaves the library
    (the restore turns it into `Interrupted` once it has rolled back)."""


class Cancel:
    """A cancel request: `set()` is one attribute store, safe in a signal handler (no lock a
    handler could find held by the thread it interrupted) and from any thread."""

    def __init__(self) -> None:
        self._requested = False
        self._watchers = 0

    def set(self) -> None:
        self._requested = True

    def clear(self) -> None:
        self._requested = False

    def is_set(self) -> bool:
        return self._requested

    def check(self) -> None:
        """Raise Cancelled if a stop was requested."""
        if self._requested:
            raise Cancelled

    @property
    def watched(self) -> bool:
        """Whether a restore is answering requests itself right now."""
        return self._watchers > 0

    @contextmanager
    def watching(self) -> Iterator[None]:
        self._watchers += 1
        try:
            yield
        finally:
            self._watchers -= 1
