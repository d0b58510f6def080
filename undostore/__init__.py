"""undostore: undo and redo for the files an AI coding agent touches.

Snapshots are git trees in a private store (never the user's `.git`, never a `git` program);
restores are atomic per file and survive a crash; sessions keep undo points and a redo stack.
Start with `Workspace`. This package never imports click.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

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

if TYPE_CHECKING:
    from undostore.limits import Limits
    from undostore.progress import Progress
    from undostore.snapshot.snapshot import SnapshotOptions, SnapshotResult
    from undostore.workspace import Workspace

__version__ = "0.1.0"

# Imported on first use: a command that opens no workspace (the footer's `status`) or takes no
# snapshot (diff of two ids, log) skips what it does not need.
_LAZY = {"Limits": "undostore.limits", "Progress": "undostore.progress",
         "Workspace": "undostore.workspace", "SnapshotOptions": "undostore.snapshot.snapshot",
         "SnapshotResult": "undostore.snapshot.snapshot"}


def __getattr__(name: str) -> object:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'undostore' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)

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
