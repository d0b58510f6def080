"""undostore: undo and redo for the files an AI coding agent touches.

Snapshots are git trees in a private store (never the user's `.git`, never a `git` program);
restores are atomic per file and survive a crash; sessions keep undo points and a redo stack.
Start with `Workspace`. This package never imports click.
"""

from __future__ import annotations

from undostore.errors import (
    ConfirmationNeeded,
    ConflictError,
    IncompleteSnapshotError,
    Interrupted,
    PendingRecoveryError,
    RefusedError,
    SnapshotError,
    StoreError,
    StoreWriteError,
    UndostoreError,
    UnknownSnapshotError,
    UnsafePathError,
    UsageError,
)
from undostore.limits import Limits
from undostore.progress import Progress
from undostore.workspace import Workspace

__version__ = "0.1.0"


def __getattr__(name: str) -> object:
    # Imported on first use: a command that takes no snapshot (diff of two ids, log) skips it.
    if name in ("SnapshotOptions", "SnapshotResult"):
        from undostore.snapshot import snapshot

        return getattr(snapshot, name)
    raise AttributeError(f"module 'undostore' has no attribute {name!r}")

__all__ = [
    "ConfirmationNeeded",
    "ConflictError",
    "IncompleteSnapshotError",
    "Interrupted",
    "Limits",
    "PendingRecoveryError",
    "Progress",
    "RefusedError",
    "SnapshotError",
    "SnapshotOptions",
    "SnapshotResult",
    "StoreError",
    "StoreWriteError",
    "UndostoreError",
    "UnknownSnapshotError",
    "UnsafePathError",
    "UsageError",
    "Workspace",
]
