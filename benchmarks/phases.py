"""Where a restore's time goes: wall time per step, measured by wrapping the library's own
functions for the length of a `with PhaseTimer(): ...` block (the library prints nothing and
knows nothing of this).

Each step's time is exclusive: a step called inside another (the blob check inside planning,
the syncs inside the writes) counts only for itself. What no wrapped function covers is
`other` (locking, the session journal of undo/redo, reading the restore journal). Functions
are named by module and attribute; a name the library no longer has is skipped and listed in
`missing`, so the benchmark keeps working while the library moves.
"""

from __future__ import annotations

import functools
import importlib
import time
from collections import defaultdict
from collections.abc import Callable

# (step, module, attribute path): the steps of restore/restore.py and what it calls.
STEPS: tuple[tuple[str, str, str], ...] = (
    ("total", "undostore.restore.restore", "restore"),
    ("recover", "undostore.restore.restore", "recover_pending"),
    ("safety snapshot", "undostore.workspace", "Workspace._snapshot_locked"),
    ("plan", "undostore.restore.restore", "flatten_difference"),
    ("plan", "undostore.restore.restore", "root_tree"),
    ("plan", "undostore.restore.restore", "_prepare"),
    ("plan", "undostore.restore.restore", "_flat"),
    ("blob verification", "undostore.restore.blobs", "BlobSource.verified"),
    ("journal", "undostore.restore.restore", "write_journal"),
    ("journal", "undostore.restore.restore", "remove_journal"),
    ("write", "undostore.restore.checkout", "Checkout.run"),
    ("sync", "undostore.store.durable", "Durability.flush_files"),
    ("sync", "undostore.store.durable", "Durability.flush_all"),
    ("stat cache", "undostore.store.statcache", "StatCache.load"),
    ("stat cache", "undostore.restore.restore", "_remember_written"),
    ("session step", "undostore.history.sessions", "complete_step"),
)
ORDER = ("safety snapshot", "plan", "blob verification", "journal", "write", "sync",
         "stat cache", "session step", "recover", "other")


class PhaseTimer:
    """Collects exclusive seconds per step for every call made while the block runs."""

    def __init__(self, steps: tuple[tuple[str, str, str], ...] = STEPS) -> None:
        self.steps = steps
        self.seconds: dict[str, float] = defaultdict(float)
        self.calls: dict[str, int] = defaultdict(int)
        self.missing: list[str] = []
        self._undo: list[Callable[[], None]] = []
        self._stack: list[list[float]] = []   # per active call: [child seconds]

    def __enter__(self) -> PhaseTimer:
        for step, module_name, attr in self.steps:
            self._wrap(step, module_name, attr)
        return self

    def __exit__(self, *exc: object) -> None:
        for undo in reversed(self._undo):
            undo()
        self._undo.clear()

    def _wrap(self, step: str, module_name: str, attr: str) -> None:
        try:
            owner: object = importlib.import_module(module_name)
        except ImportError:
            self.missing.append(f"{module_name}.{attr}")
            return
        *outer, name = attr.split(".")
        for part in outer:
            owner = getattr(owner, part, None)
        raw = owner.__dict__.get(name) if owner is not None else None
        if raw is None:
            self.missing.append(f"{module_name}.{attr}")
            return
        is_classmethod = isinstance(raw, classmethod)
        func = raw.__func__ if is_classmethod else raw

        @functools.wraps(func)
        def timed(*args: object, **kwargs: object) -> object:
            self._stack.append([0.0])
            started = time.perf_counter()
            try:
                return func(*args, **kwargs)
            finally:
                spent = time.perf_counter() - started
                children = self._stack.pop()[0]
                self.seconds[step] += spent - children
                self.calls[step] += 1
                if self._stack:
                    self._stack[-1][0] += spent

        setattr(owner, name, classmethod(timed) if is_classmethod else timed)
        self._undo.append(lambda: setattr(owner, name, raw))

    def breakdown(self, outer: float | None = None) -> dict[str, float]:
        """Seconds per step in ORDER; `other` is what the wrapped restore (or `outer`, the
        caller's own measurement of the whole operation) spent outside every named step."""
        named = {k: v for k, v in self.seconds.items() if k != "total"}
        whole = outer if outer is not None else sum(self.seconds.values())
        out = {step: named.get(step, 0.0) for step in ORDER if step != "other"}
        out["other"] = max(0.0, whole - sum(named.values()))
        return out
