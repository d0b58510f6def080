"""`undostore status` (one line for a host's footer, kept fast) and `undostore ops` (the
operation log)."""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from typing import Any, NamedTuple

import click

from .common import (
    Context,
    emit,
    json_option,
    note,
    pass_context,
    read_only,
    session_option,
    stdin_is_terminal,
)
from .complete import complete_sessions

STDIN_WAIT_SECONDS = 0.5   # a host writes its JSON at once; a silent open pipe is no host


class HostStatusLine(NamedTuple):
    """What a host's statusLine JSON on stdin says: its conversation and its folder."""

    session: str | None
    cwd: str | None


def read_host_status_line(wait: float = STDIN_WAIT_SECONDS) -> HostStatusLine:
    """The session and folder a host's statusLine JSON names (Claude Code sends `session_id`,
    `cwd`, `workspace.current_dir`), when stdin is not a terminal and holds one object. An
    empty, closed or silent stdin means none: it is read on a helper thread for at most `wait`
    seconds, so status never waits for input that does not come."""
    if sys.stdin is None or stdin_is_terminal():
        return HostStatusLine(None, None)
    box: list[bytes] = []
    reader = threading.Thread(target=lambda: box.append(_read_all_stdin()), daemon=True)
    reader.start()
    reader.join(wait)
    try:
        doc = json.loads(box[0].decode("utf-8-sig")) if box and box[0].strip() else None
    except (UnicodeDecodeError, ValueError):
        doc = None
    if not isinstance(doc, dict):
        return HostStatusLine(None, None)
    workspace = doc.get("workspace")
    folder = workspace.get("current_dir") if isinstance(workspace, dict) else None
    cwd = folder if isinstance(folder, str) and folder else doc.get("cwd")
    session = doc.get("session_id")
    return HostStatusLine(session if isinstance(session, str) and session else None,
                          cwd if isinstance(cwd, str) and cwd else None)


def _read_all_stdin(limit: int = 1 << 20) -> bytes:
    """stdin's bytes up to its end; the descriptor itself, not Python's buffered reader, whose
    lock a thread still blocked in it would hold at interpreter exit."""
    chunks: list[bytes] = []
    try:
        fd = sys.stdin.fileno()
        while sum(map(len, chunks)) < limit:
            chunk = os.read(fd, 65536)
            if not chunk:
                break
            chunks.append(chunk)
    except (OSError, ValueError, AttributeError):
        pass
    return b"".join(chunks)


@click.command("status")
@session_option
@json_option
@pass_context
def status_command(ctx: Context, session: str | None, as_json: bool) -> None:
    """One line for a host's footer: `undo:N redo:M`, plus ` restoring` while a restore runs,
    or ` recovery_required` while one a dead process left waits to be finished or rolled back,
    and ` no-hook` while the host's conversation has not reached undostore's hook here.

    With a host's statusLine JSON on stdin (Claude Code sends `session_id` and `cwd`), the
    session and the root are the ones it names (`--session` and `--root` still win). Reads only
    the session journals: cheap enough to run on every prompt render, and it never creates a
    store (a folder never protected shows undo:0 redo:0).
    """
    from undostore.history.status import status_at
    from undostore.store.discover import discover

    host = read_host_status_line()
    root = ctx.root
    if root is None and host.cwd is not None and os.path.isdir(host.cwd):
        root = discover(host.cwd, ctx.store or os.environ.get("UNDOSTORE_STORE") or None,
                        force=ctx.force).root
    status = status_at(root, ctx.store, session or host.session, force=ctx.force,
                       host_session=session is None and host.session is not None)
    if status.chosen:
        note(f"undostore: session {status.session!r} (newest undo point)")
    for line in status.damage:
        note(f"undostore: warning: {line}")
    emit(as_json, status.to_json(), status.line())


@click.command("ops")
@click.option("--session", "-s", metavar="NAME", default=None, shell_complete=complete_sessions,
              help="Only this session's operations (default: every session's, and those "
                   "outside any session).")
@click.option("--since", metavar="DURATION", default=None,
              help="Only operations newer than this: 90s, 30m, 2h, 1d, 1w.")
@json_option
@pass_context
@read_only(lambda options: {"ops": []})
def ops_command(ctx: Context, session: str | None, since: str | None, as_json: bool) -> None:
    """The operation log, newest first: every snapshot, restore, undo, redo, drop and gc.

    Each line: when, what, the session, the snapshot id it produced or restored, and the safety
    snapshot taken before files changed (restore it to take the operation back). Ids listed
    here stay restorable for at least 24 hours, also those outside any session.
    """
    from undostore.store.oplog import since_cutoff

    since_cutoff(since)  # a bad duration fails before the store is opened
    ops = ctx.workspace().ops(session=session, since=since)
    emit(as_json, {"ops": [op.to_json() for op in ops]},
         lambda: "\n".join(_op_line(op) for op in ops))


def _op_line(op: Any) -> str:
    when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(op.time))
    parts = [when, f"{op.op:<8}", (op.id or "-")[:12], op.session or "-"]
    if op.safety and op.safety != op.id:
        parts.append(f"safety {op.safety[:12]}")
    if op.label:
        parts.append(op.label)
    return "  ".join(parts)


COMMANDS = [status_command, ops_command]
