"""undostore: undo and redo for the files an AI coding agent touches.

Snapshots are git trees in a private store (never the user's `.git`, never a `git` program);
restores are atomic per file and survive a crash; sessions keep undo points and a redo stack.
Start with `Workspace`. This package never imports click.
"""

from __future__ import annotations

# Not `typing.TYPE_CHECKING`: importing typing costs the resident process's caller, which
# imports `undostore.home` (and so this package) on every hook call, more than all of itself.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from undostore.diff.patch import (
        GIT_COLORS,
        PLAIN,
        fill_line_counts,
        render,
    )
    from undostore.diff.trees import normalize_spec
    from undostore.errors import (
        ConfirmationNeeded,
        ConflictError,
        IncompleteSnapshotError,
        Interrupted,
        NoStoreError,
        PendingRecoveryError,
        RefusedError,
        SnapshotError,
        StoreError,
        StoreWriteError,
        UndostoreError,
        UnknownSnapshotError,
        UnsafePathError,
        UntrustedStoreError,
        UsageError,
    )
    from undostore.fileio import (
        atomic_write,
        make_private_dirs,
    )
    from undostore.history.direction import Direction
    from undostore.history.journal import (
        session_name_for,
        session_names,
    )
    from undostore.history.sessions import no_session
    from undostore.history.status import (
        known_points,
        open_existing,
        status_at,
    )
    from undostore.history.stores import (
        list_stores,
        orphans,
        rebind,
    )
    from undostore.limits import Limits
    from undostore.progress import (
        Progress,
        no_progress,
    )
    from undostore.restore.cancel import Cancel
    from undostore.restore.revert import conflict_notes
    from undostore.snapshot.snapshot import (
        SnapshotOptions,
        SnapshotResult,
    )
    from undostore.store.discover import discover
    from undostore.store.once import (
        EventAnswer,
        OnceKey,
    )
    from undostore.store.oplog import since_cutoff
    from undostore.store.statcache import (
        last_loaded as last_loaded_stat_cache,
    )
    from undostore.store.statcache import (
        preload as preload_stat_cache,
    )
    from undostore.store.store import recorded_root
    from undostore.store.trust import check as check_trusted
    from undostore.workspace import Workspace

__version__ = "0.1.0"

# The public surface, each name with where it lives, imported on first use: a command that opens
# no workspace (the footer's `status`) or takes no snapshot (diff of two ids, log) skips what it
# does not need, and `import undostore` costs next to nothing. Front ends (undostore's command
# line, hook, MCP server and resident process) import the library through these names, besides
# `undostore.settings` and `undostore.home`, so the modules behind them can move.
_ERRORS = ("ConfirmationNeeded", "ConflictError", "IncompleteSnapshotError", "Interrupted",
           "NoStoreError", "PendingRecoveryError", "RefusedError", "SnapshotError", "StoreError",
           "StoreWriteError", "UndostoreError", "UnknownSnapshotError", "UnsafePathError",
           "UntrustedStoreError", "UsageError")
_LAZY = {
    **dict.fromkeys(_ERRORS, "undostore.errors"),
    # the workspace and what it takes and gives
    "Workspace": "undostore.workspace", "Limits": "undostore.limits",
    "Progress": "undostore.progress", "no_progress": "undostore.progress",
    "SnapshotOptions": "undostore.snapshot.snapshot",
    "SnapshotResult": "undostore.snapshot.snapshot",
    "Direction": "undostore.history.direction", "Cancel": "undostore.restore.cancel",
    "OnceKey": "undostore.store.once", "EventAnswer": "undostore.store.once",
    # reading without a workspace: stores, sessions, the footer's status, the operation log
    "discover": "undostore.store.discover", "recorded_root": "undostore.store.store",
    "list_stores": "undostore.history.stores", "orphans": "undostore.history.stores",
    "rebind": "undostore.history.stores",
    "session_name_for": "undostore.history.journal",
    "session_names": "undostore.history.journal", "no_session": "undostore.history.sessions",
    "status_at": "undostore.history.status", "known_points": "undostore.history.status",
    "open_existing": "undostore.history.status", "since_cutoff": "undostore.store.oplog",
    # showing changes
    "render": "undostore.diff.patch", "PLAIN": "undostore.diff.patch",
    "GIT_COLORS": "undostore.diff.patch", "fill_line_counts": "undostore.diff.patch",
    "normalize_spec": "undostore.diff.trees", "conflict_notes": "undostore.restore.revert",
    # files of the user's own: a host's config, the resident process's folder and cache
    "atomic_write": "undostore.fileio", "make_private_dirs": "undostore.fileio",
    "check_trusted": "undostore.store.trust:check",
    "preload_stat_cache": "undostore.store.statcache:preload",
    "last_loaded_stat_cache": "undostore.store.statcache:last_loaded",
}


def __getattr__(name: str) -> object:
    where = _LAZY.get(name)
    if where is None:
        raise AttributeError(f"module 'undostore' has no attribute {name!r}")
    module, _, attribute = where.partition(":")
    return getattr(__import__(module, fromlist=["_"]), attribute or name)


__all__ = [
    "atomic_write",
    "Cancel",
    "check_trusted",
    "ConfirmationNeeded",
    "conflict_notes",
    "ConflictError",
    "Direction",
    "discover",
    "fill_line_counts",
    "GIT_COLORS",
    "IncompleteSnapshotError",
    "Interrupted",
    "known_points",
    "last_loaded_stat_cache",
    "Limits",
    "list_stores",
    "make_private_dirs",
    "no_progress",
    "no_session",
    "normalize_spec",
    "NoStoreError",
    "OnceKey",
    "open_existing",
    "orphans",
    "PendingRecoveryError",
    "EventAnswer",
    "PLAIN",
    "preload_stat_cache",
    "Progress",
    "rebind",
    "recorded_root",
    "RefusedError",
    "render",
    "session_name_for",
    "session_names",
    "since_cutoff",
    "SnapshotError",
    "SnapshotOptions",
    "SnapshotResult",
    "status_at",
    "StoreError",
    "StoreWriteError",
    "UndostoreError",
    "UnknownSnapshotError",
    "UnsafePathError",
    "UntrustedStoreError",
    "UsageError",
    "Workspace",
]
