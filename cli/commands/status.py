"""`undostore status` (one line for a host's footer, kept fast) and `undostore ops` (the
operation log)."""

from __future__ import annotations

import time
from typing import Any

import click

from ..common import (
    Context,
    emit,
    json_option,
    pass_context,
    read_only,
    session_option,
)
from ..complete import complete_sessions
from ..plain import Options
from ..results import ops_json
from .status_run import run


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
    run(Options(ctx.root, ctx.store, ctx.force), session, as_json)


@click.command("ops")
@click.option("--session", "-s", metavar="NAME", default=None, shell_complete=complete_sessions,
              help="Only this session's operations (default: every session's, and those "
                   "outside any session).")
@click.option("--since", metavar="DURATION", default=None,
              help="Only operations newer than this: 90s, 30m, 2h, 1d, 1w.")
@json_option
@pass_context
@read_only(lambda options: ops_json([]))
def ops_command(ctx: Context, session: str | None, since: str | None, as_json: bool) -> None:
    """The operation log, newest first: every snapshot, restore, undo, redo, drop and gc.

    Each line: when, what, the session, the snapshot id it produced or restored, and the safety
    snapshot taken before files changed (restore it to take the operation back). Ids listed
    here stay restorable for at least 24 hours, also those outside any session.
    """
    from undostore import since_cutoff

    since_cutoff(since)  # a bad duration fails before the store is opened
    ops = ctx.workspace().ops(session=session, since=since)
    emit(as_json, ops_json(ops),
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
