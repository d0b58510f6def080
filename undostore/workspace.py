"""The library's front door: one root, its store, and every operation as one method call.

    from undostore import Workspace
    with Workspace("path/to/project") as ws:
        point = ws.snapshot(session="agent", label="before turn 7")
        ...
        ws.undo(session="agent", confirm=lambda plan: True)

Each method is the single library call behind one CLI command. The facade composes policy that
no layer below knows about: finishing an interrupted restore before anything else, undo as a
restore plus a journal step, and which ids a prefix may name. No library module imports it.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from undostore.errors import UnknownSnapshotError
from undostore.store.store import Store, check_root, default_store_path

if TYPE_CHECKING:
    from undostore.diff.change import Change
    from undostore.diff.trees import DiffResult
    from undostore.history.gc import GcResult
    from undostore.history.sessions import Log, SessionInfo
    from undostore.history.verify import VerifyResult
    from undostore.restore.progress import OnProgress
    from undostore.restore.restore import Confirm, RestoreResult, Worktree
    from undostore.snapshot.snapshot import SnapshotOptions, SnapshotResult

DEFAULT_SESSION = "default"


def session_name(session: str | None) -> str:
    """`--session`, else `UNDOSTORE_SESSION`, else "default" (the contract)."""
    return session or os.environ.get("UNDOSTORE_SESSION") or DEFAULT_SESSION


class Workspace:
    """A root folder and its private store."""

    def __init__(self, root: str | os.PathLike[str] = ".",
                 store: str | os.PathLike[str] | None = None, *, force: bool = False) -> None:
        self.root = check_root(os.fspath(root), force)
        self.force = force
        store_path = os.fspath(store) if store is not None else os.environ.get("UNDOSTORE_STORE")
        self.store = Store(store_path or default_store_path(self.root), root=self.root)
        self.store.listed_snapshots = self._listed_snapshots
        self._recovered = False

    def _listed_snapshots(self) -> set[bytes]:
        from undostore.history.anchors import listed_snapshots

        return listed_snapshots(self.store)

    # --- snapshot -----

    def snapshot(self, session: str | None = None, label: str | None = None,
                 meta: dict[str, Any] | None = None,
                 options: SnapshotOptions | None = None) -> SnapshotResult:
        """Capture the files now; with `session`, also record an undo point."""
        if session is not None:
            from undostore.history.journal import validate_name

            validate_name(session_name(session))  # a bad name fails before any work is done
        with self.store.lock:
            self._recover_if_needed()
            result = self._snapshot_locked(options)
            if session is not None:
                from undostore.history.sessions import record_undo_point

                record_undo_point(self.store, session_name(session), result.id, label, meta)
        return result

    def _snapshot_locked(self, options: SnapshotOptions | None = None) -> SnapshotResult:
        """A snapshot with the lock already held (also the safety snapshot of a restore)."""
        from undostore.snapshot.snapshot import SnapshotOptions, take_snapshot

        return take_snapshot(self.root, self.store, options or SnapshotOptions(force=self.force))

    def resolve(self, snapshot_id: str) -> bytes:
        return self.store.resolve(snapshot_id)

    # --- diff -----

    def compare(self, from_id: str, to_id: str | None = None, paths: list[str] | None = None,
                find_renames: bool = False) -> DiffResult:
        """Changes from snapshot `from_id` to `to_id` (None: snapshot the files now, outside
        any journal), with the two ids compared."""
        from undostore.diff.trees import DiffResult, diff_trees

        from_sha = self._resolve_side(from_id, "FROM")
        if to_id is None:
            with self.store.lock:
                self._recover_if_needed()
                to_sha = bytes.fromhex(self._snapshot_locked().id)
        else:
            to_sha = self._resolve_side(to_id, "TO")
        changes = diff_trees(self.store, from_sha, to_sha, paths=paths, find_renames=find_renames)
        return DiffResult(from_sha.hex(), to_sha.hex(), changes, to_is_now=to_id is None)

    def diff(self, from_id: str, to_id: str | None = None, paths: list[str] | None = None,
             find_renames: bool = False) -> list[Change]:
        """Changes from snapshot `from_id` to `to_id` (None: the files now)."""
        return self.compare(from_id, to_id, paths=paths, find_renames=find_renames).changes

    def _resolve_side(self, ref: str, which: str) -> bytes:
        try:
            return self.resolve(ref)
        except UnknownSnapshotError as err:
            raise UnknownSnapshotError(f"{which}: {err.message}") from None

    # --- restore -----

    def _worktree(self) -> Worktree:
        from undostore.history.sessions import complete_step
        from undostore.restore.restore import Worktree

        return Worktree(self.root, self.store, self._snapshot_locked,
                        step_done=lambda context, target, safety: complete_step(
                            self.store, context, target, safety))

    def restore(self, target: str, *, expected: str | None = None, dry_run: bool = False,
                confirm: Confirm | None = None, on_progress: OnProgress | None = None
                ) -> RestoreResult:
        """Make the files equal to snapshot `target`, safely (see restore/restore.py);
        `on_progress` hears how far it is (restore/progress.py)."""
        from undostore.restore.restore import restore

        try:
            return restore(self._worktree(), target, expected=expected, dry_run=dry_run,
                           confirm=confirm, on_progress=on_progress)
        finally:
            self._recovered = False  # a restore that stopped half-way left a journal

    def abort_restore(self) -> RestoreResult | None:
        """Roll an interrupted restore back to its safety snapshot."""
        from undostore.restore.restore import abort_pending

        try:
            return abort_pending(self._worktree())
        finally:
            self._recovered = False

    def _recover_if_needed(self) -> None:
        """Finish an interrupted restore before anything else touches the files (lock held)."""
        if self._recovered:
            return
        try:
            pending = bool(os.listdir(self.store.restore_dir))
        except FileNotFoundError:
            pending = False
        if pending:  # the common case skips importing the restore machinery (6 ms)
            from undostore.restore.restore import recover_pending

            recover_pending(self._worktree())
        self._recovered = True

    # --- sessions -----

    def log(self, session: str | None = None) -> Log:
        from undostore.history.sessions import read_log

        return read_log(self.store, session_name(session))

    def undo(self, session: str | None = None, *, dry_run: bool = False,
             confirm: Confirm | None = None, on_progress: OnProgress | None = None
             ) -> RestoreResult:
        from undostore.history.sessions import undo

        try:
            return undo(self._worktree(), session_name(session), dry_run=dry_run,
                        confirm=confirm, on_progress=on_progress)
        finally:
            self._recovered = False

    def redo(self, session: str | None = None, *, dry_run: bool = False,
             confirm: Confirm | None = None, on_progress: OnProgress | None = None
             ) -> RestoreResult:
        from undostore.history.sessions import redo

        try:
            return redo(self._worktree(), session_name(session), dry_run=dry_run,
                        confirm=confirm, on_progress=on_progress)
        finally:
            self._recovered = False

    def sessions(self) -> list[SessionInfo]:
        from undostore.history.sessions import list_sessions

        return list_sessions(self.store)

    def drop(self, session: str) -> bool:
        from undostore.history.sessions import drop_session

        return drop_session(self.store, session)

    def gc(self, grace_seconds: float | None = None) -> GcResult:
        from undostore.history.gc import collect

        return collect(self.store, grace_seconds=grace_seconds)

    def verify(self, snapshot_id: str | None = None) -> VerifyResult:
        from undostore.history.verify import verify

        return verify(self.store, snapshot_id)

    def close(self) -> None:
        self.store.close()

    def __enter__(self) -> Workspace:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
