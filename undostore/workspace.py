"""The library's front door: one root, its store, and every operation as one method call.

    from undostore import Workspace
    ws = Workspace("path/to/project")
    point = ws.snapshot(session="agent", label="before turn 7")
    ...
    ws.undo(session="agent", confirm=lambda plan: True)

Each method is the single library call behind one CLI command. Methods that change the store take
the store lock; the lock is an OS lock, so a crashed process never leaves it stale.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from .store import Store, check_root, default_store_path

if TYPE_CHECKING:
    from .diff import Change
    from .gc import GcResult
    from .restore import Confirm, RestoreResult
    from .revert import RevertResult
    from .sessions import Log, SessionInfo
    from .snapshot import SnapshotOptions, SnapshotResult
    from .verify import VerifyResult

DEFAULT_SESSION = "default"


def session_name(session: str | None) -> str:
    """`--session`, else `UNDOSTORE_SESSION`, else "default" (the contract)."""
    return session or os.environ.get("UNDOSTORE_SESSION") or DEFAULT_SESSION


def _next_point(ws: Workspace, point: str) -> str | None:
    """The undo point after `point` in the session listing it (its last listing, so a turn that
    changed nothing is skipped); None when it is the newest. Not an undo point: UsageError."""
    from . import journal as journals
    from .errors import UsageError

    wanted = ws.store.resolve(point).hex()
    for name in journals.session_names(ws.store):
        ids = [p.id for p in journals.load(ws.store, name).undo]
        if wanted in ids:
            at = len(ids) - 1 - ids[::-1].index(wanted)
            return ids[at + 1] if at + 1 < len(ids) else None
    raise UsageError(f"{wanted[:12]} is not an undo point of any session: name the state to "
                     "revert to as well (revert FROM TO)")


class Workspace:
    """A root folder and its private store."""

    def __init__(self, root: str | os.PathLike[str] = ".",
                 store: str | os.PathLike[str] | None = None, *, force: bool = False) -> None:
        self.root = check_root(os.fspath(root), force)
        self.force = force
        store_path = os.fspath(store) if store is not None else os.environ.get("UNDOSTORE_STORE")
        self.store = Store(store_path or default_store_path(self.root), root=self.root)
        self._recovered = False

    # --- snapshot -----

    def snapshot(self, session: str | None = None, label: str | None = None,
                 meta: dict[str, Any] | None = None,
                 options: SnapshotOptions | None = None) -> SnapshotResult:
        """Capture the files now; with `session`, also record an undo point."""
        from .snapshot import SnapshotOptions, take_snapshot  # not needed by diff, log, ...

        options = options or SnapshotOptions(force=self.force)
        if session is not None:
            from .journal import validate_name

            validate_name(session_name(session))  # a bad name fails before any work is done
        with self.store.lock:
            self._recover_if_needed()
            result = take_snapshot(self.root, self.store, options)
            if session is not None:
                from .sessions import record_undo_point

                record_undo_point(self, session_name(session), result.id, label, meta)
        return result

    def _snapshot_locked(self, options: SnapshotOptions | None = None) -> SnapshotResult:
        """A snapshot for internal use (safety snapshots, diff against now); lock already held."""
        from .snapshot import SnapshotOptions, take_snapshot

        return take_snapshot(self.root, self.store, options or SnapshotOptions(force=self.force))

    def resolve(self, snapshot_id: str) -> bytes:
        return self.store.resolve(snapshot_id)

    # --- diff -----

    def diff(self, from_id: str, to_id: str | None = None, paths: list[str] | None = None,
             find_renames: bool = False) -> list[Change]:
        """Changes from snapshot `from_id` to `to_id` (None: the files now)."""
        from .diff import diff_workspace

        return diff_workspace(self, from_id, to_id, paths=paths, find_renames=find_renames)

    # --- restore -----

    def restore(self, target: str, *, expected: str | None = None, dry_run: bool = False,
                confirm: Confirm | None = None) -> RestoreResult:
        """Make the files equal to snapshot `target`, safely (see restore.py)."""
        from .restore import restore_workspace

        return restore_workspace(self, target, expected=expected, dry_run=dry_run,
                                 confirm=confirm)

    def revert(self, from_id: str, to_id: str | None = None, *, merge: bool = False,
               dry_run: bool = False, confirm: Confirm | None = None) -> RevertResult:
        """Take back the change FROM -> TO on the files now, keeping later changes (revert.py).
        With one id, an undo point: TO is the session's next point, or the files now."""
        from .revert import revert_workspace

        if to_id is None:
            to_id = _next_point(self, from_id)
        return revert_workspace(self, from_id, to_id, merge=merge, dry_run=dry_run,
                                confirm=confirm)

    def abort_restore(self) -> RestoreResult | None:
        """Roll an interrupted restore back to its safety snapshot."""
        from .restore import abort_pending

        return abort_pending(self)

    def _recover_if_needed(self) -> None:
        """Finish an interrupted restore before anything else touches the files."""
        if self._recovered:
            return
        try:
            pending = bool(os.listdir(self.store.restore_dir))
        except FileNotFoundError:
            pending = False
        if not pending:  # the common case: skip importing the restore machinery (6 ms)
            self._recovered = True
            return
        from .restore import recover_pending

        recover_pending(self)
        self._recovered = True

    # --- sessions -----

    def log(self, session: str | None = None) -> Log:
        from .sessions import read_log

        return read_log(self, session_name(session))

    def undo(self, session: str | None = None, *, dry_run: bool = False,
             confirm: Confirm | None = None) -> RestoreResult:
        from .sessions import undo

        return undo(self, session_name(session), dry_run=dry_run, confirm=confirm)

    def redo(self, session: str | None = None, *, dry_run: bool = False,
             confirm: Confirm | None = None) -> RestoreResult:
        from .sessions import redo

        return redo(self, session_name(session), dry_run=dry_run, confirm=confirm)

    def sessions(self) -> list[SessionInfo]:
        from .sessions import list_sessions

        return list_sessions(self)

    def drop(self, session: str) -> bool:
        from .sessions import drop_session

        return drop_session(self, session)

    def gc(self, grace_seconds: float | None = None) -> GcResult:
        from .gc import collect

        return collect(self, grace_seconds=grace_seconds)

    def verify(self, snapshot_id: str | None = None) -> VerifyResult:
        from .verify import verify

        return verify(self, snapshot_id)

    def close(self) -> None:
        self.store.close()

    def __enter__(self) -> Workspace:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
