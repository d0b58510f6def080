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
    from undostore.diff.hunkpick import EditFailed
    from undostore.diff.hunkpick import parse_edited as parse_edited_hunk
    from undostore.diff.hunkpick import split as split_hunk
    from undostore.diff.hunkpick import text as hunk_text
    from undostore.diff.patch import (
        GIT_COLORS,
        PLAIN,
        fill_line_counts,
        render,
    )
    from undostore.diff.pickfile import FileChange, FilePick, Picked
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
    from undostore.git.packindex import (
        adopt_index_facts,
        index_facts,
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
    from undostore.history.steps import DoubtfulChange
    from undostore.history.stores import (
        list_stores,
        orphans,
        rebind,
    )
    from undostore.history.toolcall import ToolCall
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
# Each module and the public names it gives (`public=inner` where the module's own name would
# say too little at the top).
_PUBLIC = {
    "undostore.errors": (
        "ConfirmationNeeded", "ConflictError", "IncompleteSnapshotError", "Interrupted",
        "NoStoreError", "PendingRecoveryError", "RefusedError", "SnapshotError", "StoreError",
        "StoreWriteError", "UndostoreError", "UnknownSnapshotError", "UnsafePathError",
        "UntrustedStoreError", "UsageError"),
    # the workspace and what it takes and gives
    "undostore.workspace": ("Workspace",),
    "undostore.limits": ("Limits",),
    "undostore.progress": ("Progress", "no_progress"),
    "undostore.snapshot.snapshot": ("SnapshotOptions", "SnapshotResult"),
    "undostore.history.direction": ("Direction",),
    "undostore.history.steps": ("DoubtfulChange",),
    "undostore.restore.cancel": ("Cancel",),
    "undostore.store.once": ("OnceKey", "EventAnswer"),
    "undostore.history.toolcall": ("ToolCall",),
    # reading without a workspace: stores, sessions, the footer's status, the operation log
    "undostore.store.discover": ("discover",),
    "undostore.store.store": ("recorded_root",),
    "undostore.history.stores": ("list_stores", "orphans", "rebind"),
    "undostore.history.journal": ("session_name_for", "session_names"),
    "undostore.history.sessions": ("no_session",),
    "undostore.history.status": ("status_at", "known_points", "open_existing"),
    "undostore.store.oplog": ("since_cutoff",),
    # showing changes
    "undostore.diff.patch": ("render", "PLAIN", "GIT_COLORS", "fill_line_counts"),
    "undostore.diff.trees": ("normalize_spec",),
    # picking hunks (`undo -p`): a file's change, its hunks, the answers
    "undostore.diff.pickfile": ("FileChange", "FilePick", "Picked"),
    "undostore.diff.hunkpick": ("EditFailed", "split_hunk=split", "hunk_text=text",
                                "parse_edited_hunk=parse_edited"),
    "undostore.restore.revert": ("conflict_notes",),
    # files of the user's own: a host's config, the resident process's folder and cache
    "undostore.fileio": ("atomic_write", "make_private_dirs"),
    "undostore.store.trust": ("check_trusted=check",),
    "undostore.store.statcache": ("preload_stat_cache=preload",
                                  "last_loaded_stat_cache=last_loaded"),
    "undostore.git.packindex": ("index_facts", "adopt_index_facts"),
}
# public name -> (module, its name there)
_LAZY = {public: (module, inner or public)
         for module, names in _PUBLIC.items()
         for public, _, inner in (name.partition("=") for name in names)}


def __getattr__(name: str) -> object:
    where = _LAZY.get(name)
    if where is None:
        raise AttributeError(f"module 'undostore' has no attribute {name!r}")
    module, inner = where
    return getattr(__import__(module, fromlist=["_"]), inner)


__all__ = [
    "adopt_index_facts",
    "atomic_write",
    "Cancel",
    "check_trusted",
    "ConfirmationNeeded",
    "conflict_notes",
    "ConflictError",
    "Direction",
    "DoubtfulChange",
    "discover",
    "EditFailed",
    "FileChange",
    "FilePick",
    "fill_line_counts",
    "GIT_COLORS",
    "hunk_text",
    "index_facts",
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
    "parse_edited_hunk",
    "Picked",
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
    "split_hunk",
    "ToolCall",
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
