"""Progress of a restore (undostore/progress.py's record), for a caller that shows it.

    def show(p: Progress) -> None:
        print(p.step, p.files_done, p.files_total, p.bytes_done, p.bytes_total)
    workspace.restore(target, on_progress=show)

The restore calls `on_progress` when it starts each step ("safety": the safety snapshot, "plan":
reading trees and checking blobs, "write": the files, "sync": making them durable) and, while it
writes, at most every `INTERVAL` seconds with the files and bytes written so far. Calls come
from the thread that runs the restore; an exception raised by the callback stops the restore
like any other error (so keep it cheap and quiet).
"""

from __future__ import annotations

import time

from undostore.progress import OnProgress, Progress

INTERVAL = 0.05


class Reporter:
    """Counts a restore's writes and hands `on_progress` a Progress now and then; without a
    callback every method does nothing (so the restore code calls it unconditionally)."""

    def __init__(self, on_progress: OnProgress | None = None) -> None:
        self.on_progress = on_progress
        self.step_name = ""
        self.files_done = self.files_total = self.bytes_done = self.bytes_total = 0
        self._next = 0.0

    @property
    def active(self) -> bool:
        return self.on_progress is not None

    def step(self, name: str, files_total: int = 0, bytes_total: int = 0) -> None:
        """A new step starts (reported at once)."""
        if self.on_progress is None:
            return
        self.step_name = name
        self.files_done = self.bytes_done = 0
        self.files_total, self.bytes_total = files_total, bytes_total
        self._send()

    def advance(self, files: int = 1, nbytes: int = 0) -> None:
        """`files` more files (`nbytes` bytes) done; reported if INTERVAL has passed."""
        if self.on_progress is None:
            return
        self.files_done += files
        self.bytes_done += nbytes
        if time.monotonic() >= self._next or self.files_done == self.files_total:
            self._send()

    def _send(self) -> None:
        assert self.on_progress is not None
        self._next = time.monotonic() + INTERVAL
        self.on_progress(Progress(self.step_name, self.files_done, self.files_total,
                                  self.bytes_done, self.bytes_total))
