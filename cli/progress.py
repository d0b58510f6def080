"""A restore's progress on the terminal: one line on stderr, redrawn in place, shown only once the
restore has run for `DELAY` seconds and only when stderr is a terminal (piped: nothing at all).

    with TerminalProgress.for_stderr() as progress:
        result = workspace.restore(target, confirm=progress.pausing(confirm),
                                   on_progress=progress.listener)

The library's callback only records the latest state (cheap, called from the restore); a small
thread draws it every `TICK` seconds, so a long step that reports nothing (a safety snapshot of
a big tree) still shows after `DELAY`. The line is cleared before a question is asked and when
the restore ends.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable
from typing import TextIO, TypeVar

from undostore import Progress

DELAY = 1.0
TICK = 0.2
T = TypeVar("T")

_FIRST = Progress("safety")
_STEP_TEXT = {"safety": "taking a safety snapshot", "plan": "checking the snapshot",
              "write": "writing files", "sync": "making the files durable"}


def describe(progress: Progress) -> str:
    """The line shown for a state, e.g. `writing files: 1,200/20,100 files, 3.1/48.0 MB`."""
    text = _STEP_TEXT.get(progress.step, progress.step)
    if progress.step == "write" and progress.files_total:
        text += (f": {progress.files_done:,}/{progress.files_total:,} files, "
                 f"{_mb(progress.bytes_done)}/{_mb(progress.bytes_total)} MB")
    return f"undostore: {text}"


def _mb(value: int) -> str:
    return f"{value / 1_000_000:.1f}"


class TerminalProgress:
    """The `on_progress` callback of a CLI command, and the thread that draws it."""

    def __init__(self, stream: TextIO | None, *, delay: float = DELAY, tick: float = TICK,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.stream = stream            # None: show nothing (not a terminal)
        self.delay, self.tick, self.clock = delay, tick, clock
        self.latest: Progress | None = None
        self._started = clock()
        self._shown = 0                 # length of the line on screen
        self._paused = False
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    @classmethod
    def for_stderr(cls) -> TerminalProgress:
        from .common import stderr_is_terminal

        return cls(sys.stderr if stderr_is_terminal() else None)

    def __call__(self, progress: Progress) -> None:
        self.latest = progress

    @property
    def listener(self) -> TerminalProgress | None:
        """The `on_progress` to hand the library: None when nothing is shown (piped), so the
        restore does not count sizes for no one and costs what the library call costs."""
        return self if self.stream is not None else None

    def __enter__(self) -> TerminalProgress:
        self._started = self.clock()
        if self.stream is not None:
            self._thread = threading.Thread(target=self._run, name="undostore-progress",
                                            daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        with self._lock:
            self._clear()

    def pausing(self, confirm: Callable[[T], bool] | None) -> Callable[[T], bool] | None:
        """`confirm` with the progress line cleared and held back while it asks."""
        if confirm is None:
            return None

        def paused(plan: T) -> bool:
            with self._lock:
                self._clear()
                self._paused = True
                asked = self.clock()
            try:
                return confirm(plan)
            finally:
                with self._lock:
                    self._paused = False
                    self._started += self.clock() - asked  # answering is not the restore's time

        return paused

    def draw(self) -> None:
        """Draw the latest state now, if the restore has run long enough (the thread's tick)."""
        with self._lock:
            # Nothing heard yet: an undo's first step is its safety snapshot.
            latest = self.latest or _FIRST
            if (self.stream is None or self._paused
                    or self.clock() - self._started < self.delay):
                return
            line = describe(latest)
            pad = max(0, self._shown - len(line))
            self.stream.write("\r" + line + " " * pad)
            self.stream.flush()
            self._shown = len(line)

    def _run(self) -> None:
        while not self._stop.wait(self.tick):
            self.draw()

    def _clear(self) -> None:
        if self.stream is not None and self._shown:
            self.stream.write("\r" + " " * self._shown + "\r")
            self.stream.flush()
            self._shown = 0
