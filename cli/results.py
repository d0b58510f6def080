"""The JSON a command prints with `--json` and its MCP tool returns, made once from the
library's results: the command adds its lines for people, the tool adds nothing (the contract:
a tool's result is its command's JSON).

Click-free, so the MCP server's calls and the command line share it without either reaching
into the other.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from undostore import SnapshotResult, Workspace
    from undostore.diff.change import Change
    from undostore.diff.trees import DiffResult
    from undostore.history.sessions import Log, SessionInfo
    from undostore.history.turns import Turn
    from undostore.restore.pending import PendingRestore
    from undostore.store.oplog import Op
    from undostore.store.store import Store

Json = dict[str, Any]


def snapshot_json(result: SnapshotResult) -> Json:
    """`snapshot`: the id, what was hashed and stored, how the tree was walked."""
    return {"id": result.id, "files": result.files, "hashed": result.hashed,
            "new_objects": result.new_objects, "new_bytes": result.new_bytes,
            "seconds": round(result.seconds, 4), "recorded": result.recorded,
            "walk": result.walk, "walk_reason": result.walk_reason,
            "warnings": [{"path": p, "message": m} for p, m in result.warnings]}


def with_pending(payload: Json, pending: PendingRestore | None) -> Json:
    """`payload` with `pending`: null, or the restore a crash left half-done (`pending`, the
    workspace's `pending_restore()`) that a reading command does not finish."""
    return {**payload, "pending": pending.to_json() if pending is not None else None}


def changes_json(store: Store, changes: list[Change]) -> list[Json]:
    """Each change as a JSON object, with its added and removed line counts."""
    from undostore import fill_line_counts

    fill_line_counts(store, changes)
    return [change.to_dict() for change in changes]


def log_json(workspace: Workspace, log: Log, turns: list[Turn]) -> Json:
    """`log`: the undo points and redo entries; with `turns` (`--stat`), each point's changes."""
    body = log.to_json()
    for entry, turn in zip(body["undo"], turns, strict=False):
        entry["changes"] = changes_json(workspace.store, turn.changes)
        entry["calls"] = turn.to_json()["calls"]   # the calls that made them (null: no calls)
        entry["turn"] = turn.span.number   # it looked at the files: an open turn is known
    return body


def sessions_json(infos: list[SessionInfo]) -> Json:
    """`sessions`: each session's counts and bytes."""
    return {"sessions": [info.to_json() for info in infos]}


def ops_json(ops: list[Op]) -> Json:
    """`ops`: the operation log, newest first."""
    return {"ops": [op.to_json() for op in ops]}


def show_json(store: Store, turn: Turn) -> Json:
    """`show`: one turn, its point and its changes with line counts."""
    from undostore import fill_line_counts

    fill_line_counts(store, turn.changes)
    return turn.to_json()


def turn_diff_json(store: Store, shown: Turn) -> Json:
    """`diff --turn N`: what the turn began with, the files after it, and its changes."""
    return {"from": shown.from_id, "to": shown.to_id if shown.span.end is not None else None,
            "to_is_now": shown.span.end is None,
            "point": shown.point.to_json(), "changes": changes_json(store, shown.changes)}


def compare_json(store: Store, result: DiffResult) -> Json:
    """`diff FROM [TO]`: the two ids compared and the changes."""
    return {"from": result.from_id, "to": None if result.to_is_now else result.to_id,
            "to_is_now": result.to_is_now,
            "changes": changes_json(store, result.changes)}


def empty_log(session: str | None) -> Json:
    """What `log` gives where no store is: no undo point, no redo entry; a named session is
    still a usage error (exit 2)."""
    from undostore import no_session

    if session is not None:
        raise no_session(session, [])
    from undostore.settings import DEFAULT_SESSION, named_session

    return {"session": named_session(None) or DEFAULT_SESSION, "undo": [], "redo": []}
