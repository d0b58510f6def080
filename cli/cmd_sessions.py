"""`log`, `undo`, `redo`, `sessions`, `drop`, `gc`, `verify`: sessions and store upkeep."""

from __future__ import annotations

import functools
import os
import sys
import time
from collections.abc import Callable
from typing import Any

import click

from .common import (
    Context,
    dry_run_option,
    emit,
    json_option,
    note,
    note_damage,
    pass_context,
    session_option,
    yes_option,
)
from .complete import complete_ids
from .pending import mention_pending


def history_session(ctx: Context, session: str | None) -> str:
    """The session a history command acts on; named on stderr when it was chosen as the one
    with the newest undo point (no --session, no $UNDOSTORE_SESSION)."""
    name, chosen = ctx.workspace().history_session(session)
    if chosen:
        note(f"undostore: session {name!r} (newest undo point)")
    return name


def _when(seconds: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(seconds))


def _point_line(kind: str, number: int, point: Any) -> str:
    # A redo entry is the state an undo left, not the undo point it took away: say which.
    if point.label:
        label = f"  (undid: {point.label})" if kind == "redo" else f"  {point.label}"
    else:
        label = ""
    return f"{kind} {number:>3}  {point.id[:12]}  {_when(point.time)}{label}"


def _emit_listing(ctx: Context, body: dict[str, Any], as_json: bool,
                  plain: Callable[[], str], empty: str | None) -> None:
    """Print what a listing command (log, sessions) found: damaged journals noted on stderr, a
    pending restore mentioned, `empty` said on stderr (not in JSON) when there is nothing."""
    note_damage(ctx.workspace())
    payload = mention_pending(ctx.workspace(), body, as_json)
    if not as_json and empty:
        note(empty)
    emit(as_json, payload, plain)


@click.command("log")
@session_option
@json_option
@pass_context
def log_command(ctx: Context, session: str | None, as_json: bool) -> None:
    """Show the undo points of a session, newest first, and its redo stack.

    Each line: undo or redo, its number (1 is what the next undo or redo restores), the
    snapshot id, when it was recorded, and its label (for a redo entry, the label of the undo
    point that the undo took away).
    """
    log = ctx.workspace().log(history_session(ctx, session))

    def plain() -> str:
        lines = [_point_line("undo", i, p) for i, p in enumerate(log.undo, 1)]
        lines += [_point_line("redo", i, p) for i, p in enumerate(log.redo, 1)]
        return "\n".join(lines)

    _emit_listing(ctx, log.to_json(), as_json, plain,
                  None if log.undo or log.redo
                  else f"undostore: session {log.session!r} has no undo points")


def _undo_or_redo(ctx: Context, which: str, session: str | None, yes: bool, dry_run: bool,
                  as_json: bool) -> None:
    from .cmd_restore import render_restore, run_restore

    workspace = ctx.workspace()
    session = history_session(ctx, session)
    action = workspace.undo if which == "undo" else workspace.redo
    result = run_restore(functools.partial(action, session), yes=yes, dry_run=dry_run,
                         action=which)
    render_restore(result, as_json, verb=f"{which}: restored")


@click.command("undo")
@session_option
@yes_option
@dry_run_option
@json_option
@pass_context
def undo_command(ctx: Context, session: str | None, yes: bool, dry_run: bool,
                 as_json: bool) -> None:
    """Restore the newest undo point of the session.

    The files as they are now are saved first (a safety snapshot), and become the redo entry,
    so `redo` takes the undo back.
    """
    _undo_or_redo(ctx, "undo", session, yes, dry_run, as_json)


@click.command("redo")
@session_option
@yes_option
@dry_run_option
@json_option
@pass_context
def redo_command(ctx: Context, session: str | None, yes: bool, dry_run: bool,
                 as_json: bool) -> None:
    """Take back the last undo of the session: restore the files as they were before it."""
    _undo_or_redo(ctx, "redo", session, yes, dry_run, as_json)


@click.command("sessions")
@json_option
@pass_context
def sessions_command(ctx: Context, as_json: bool) -> None:
    """List the sessions of this store with their numbers of undo and redo entries."""
    infos = ctx.workspace().sessions()
    _emit_listing(ctx, {"sessions": [s.to_json() for s in infos]}, as_json,
                  lambda: "\n".join(f"{s.name}  undo {s.undo}  redo {s.redo}" for s in infos),
                  None if infos else "undostore: no sessions")


@click.command("drop")
@session_option
@json_option
@pass_context
def drop_command(ctx: Context, session: str | None, as_json: bool) -> None:
    """Forget a session: its journal and its anchors (gc then frees what only it kept).

    The session must be named (--session or $UNDOSTORE_SESSION): dropping the 'default'
    session by accident would be a loss.
    """
    session = session or os.environ.get("UNDOSTORE_SESSION") or None
    if session is None:
        raise click.UsageError("drop needs --session NAME (the session to forget)")
    from undostore.errors import UsageError

    dropped = ctx.workspace().drop(session)
    if not dropped:
        raise UsageError(f"no session named {session!r} (see `undostore sessions`)")
    if not as_json:
        note(f"undostore: dropped session {session!r}")
    emit(as_json, {"dropped": dropped, "session": session}, None)


@click.command("gc")
@click.option("--grace", "grace", type=click.FloatRange(min=0), default=None, metavar="SECONDS",
              help="Keep every snapshot the operation log names (handed out, or let go by a "
                   "journal) for this long (default 86400: a day), so an id printed by "
                   "`snapshot`, a safety snapshot or a cleared redo entry stays restorable. "
                   "Journals keep what they list.")
@json_option
@pass_context
def gc_command(ctx: Context, grace: float | None, as_json: bool) -> None:
    """Release anchors no journal lists, prune what nothing reaches, repack, clean up."""
    result = ctx.workspace().gc(grace_seconds=grace)
    if not as_json:
        note_damage(ctx.workspace())
    if result.missing and not as_json:
        note(f"undostore: warning: {len(result.missing)} needed objects are missing from the "
             "store; run `undostore verify`")
    for path in result.busy_files:
        note(f"undostore: warning: {path}: in use, not removed (the next gc retries)")
    if result.damaged and not as_json:
        note(f"undostore: warning: {len(result.damaged)} objects are damaged; their packs were "
             "kept, nothing they might need was deleted; run `undostore verify --repair`")

    def plain() -> str:
        summary = (f"freed {result.freed_bytes / 1e6:.1f} MB; objects {result.objects_before:,} "
                   f"-> {result.objects_after:,}; packs {result.packs_before} -> "
                   f"{result.packs_after}; anchors released {result.anchors_released}, restored "
                   f"{result.anchors_created}; {result.seconds:.2f} s")
        return summary + ("\n" + _kept_line(result.kept, grace) if result.kept else "")

    emit(as_json, result.to_json(), plain)


_KEPT_WORDS = {"files_now": "the files now",
               "pending_restore": "a pending restore",
               "shared": "shared by several of these"}


def _kept_line(kept: list[dict[str, Any]], grace: float | None) -> str:
    """Why gc freed what it freed: what holds the bytes it kept, largest first."""
    hours = (86400 if grace is None else grace) / 3600
    parts = []
    for item in kept:
        if item["what"] == "session":
            what = f"session {item['session']!r} alone (`drop` frees it)"
        elif item["what"] == "outside_sessions":
            what = (f"snapshots taken outside sessions in the last {hours:g} h "
                    "(`gc --grace 0` frees them)")
        else:
            what = _KEPT_WORDS.get(item["what"], item["what"])
        parts.append(f"{what} {item['bytes'] / 1e6:.1f} MB")
    return "kept: " + "; ".join(parts)


@click.command("verify")
@click.argument("snapshot_id", metavar="[ID]", required=False, shell_complete=complete_ids)
@click.option("--repair", is_flag=True,
              help="Re-index, move damaged packs aside, write again what the files still hold, "
                   "keep salvaged journals; then report what is lost.")
@json_option
@pass_context
def verify_command(ctx: Context, snapshot_id: str | None, repair: bool, as_json: bool) -> None:
    """Check that every object the journals (or snapshot ID) need is present and intact.

    Exit code 3 when something is missing or damaged; each problem is listed with its snapshot
    and path.
    """
    from undostore.errors import IncompleteSnapshotError

    result = ctx.workspace().verify(snapshot_id, repair=repair)
    if not as_json:
        for line in result.damaged_sessions:
            note(f"undostore: warning: {line}")
    payload = mention_pending(ctx.workspace(), result.to_json(), as_json)

    def plain() -> str:
        lines = [f"repaired: {line}" for line in result.repaired]
        lines += [f"{kind} {p.snapshot[:12]} {p.path or '(root)'} {p.id}: {p.reason}"
                 for kind, problems in (("missing", result.missing), ("corrupt", result.corrupt))
                 for p in problems]
        verdict = "ok" if result.ok else "FAILED"
        lines.append(f"{verdict}: {len(result.snapshots)} snapshots, {result.checked:,} objects "
                     f"checked, {len(result.missing)} missing, {len(result.corrupt)} corrupt")
        if repair and result.lost_snapshots:
            lines.append(f"lost: {len(result.lost_snapshots)} snapshots cannot be restored whole "
                         "(the paths above); `undostore drop --session NAME` forgets a session")
        return "\n".join(lines)

    emit(as_json, payload, plain)
    if not result.ok:
        sys.stdout.flush()
        sys.exit(IncompleteSnapshotError.exit_code)


COMMANDS = [log_command, undo_command, redo_command, sessions_command, drop_command, gc_command,
            verify_command]
