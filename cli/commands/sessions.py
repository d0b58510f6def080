"""`log`, `undo`, `redo`, `sessions`, `drop`, `gc`, `verify`: sessions and store upkeep."""

from __future__ import annotations

import functools
import sys
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import click

from undostore import Direction

from ..common import (
    Context,
    TakesPaths,
    dry_run_option,
    emit,
    given_paths,
    history_session,
    json_option,
    named_session_option,
    note,
    note_damage,
    pass_context,
    read_only,
    session_option,
    yes_option,
)
from ..complete import complete_ids
from ..pager import no_pager_option, paged
from ..results import empty_log, log_json, sessions_json
from ..textout import call_lines, columns, part_note, want_color
from .pending import mention_pending

if TYPE_CHECKING:
    from undostore import Workspace
    from undostore.diff.change import Change
    from undostore.history.journal import Point
    from undostore.history.steps import StepResult


def _when(seconds: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(seconds))


def _point_line(kind: str, number: int | None, point: Point) -> str:
    """One line of `log`: the turn's number as `undo N` counts it ("-": it changed no file)."""
    # A redo entry is a turn an undo took back (its undo point's id): say so.
    if point.label:
        label = f"  (undone: {point.label})" if kind == "redo" else f"  {point.label}"
    else:
        label = ""
    if number is None:
        label += "  (changed no file)"
    if point.partial:   # an undo or redo of some paths split the turn between the two stacks
        label += f"  {part_note(point)}"
    shown = number if number is not None else "-"
    return f"{kind} {shown:>3}  {point.id[:12]}  {_when(point.time)}{label}"


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
@click.option("-n", "--max-count", "count", type=click.IntRange(min=0), default=None,
              metavar="N", help="Show at most N undo points (and N redo entries).")
@click.option("--stat", "stat", is_flag=True,
              help="Under each undo point, what its turn changed (git's diffstat).")
@click.option("--all", "every_session", is_flag=True,
              help="Every conversation's turns in one timeline, newest first, each with its "
                   "tool calls and files.")
@click.option("--graph", is_flag=True,
              help="With --all: a lane per conversation, from its newest turn to its oldest.")
@no_pager_option
@json_option
@pass_context
@read_only(lambda options: {"all": True, "turns": []} if options.get("every_session")
           else empty_log(options.get("session")))
def log_command(ctx: Context, session: str | None, count: int | None, stat: bool,
                every_session: bool, graph: bool, no_pager: bool, as_json: bool) -> None:
    """Show the undo points of a session, newest first, and its redo stack.

    Each line: undo or redo, its number (1 is what the next undo or redo takes back or applies
    again; `undo N` takes back the turns down to number N; "-": a turn that changed no file,
    which undo skips), the snapshot id, when it was recorded, and its label (for a redo entry,
    the label of the undo point that the undo took away). With --stat, each undo
    point's turn as `show` lists it. With --all, every session's turns in one timeline, newest
    first, each with its session, its tool calls and its files (--graph: a lane per session).
    On a terminal, long output goes through a pager.
    """
    if graph and not every_session:
        raise click.UsageError("--graph goes with --all")
    if every_session:
        if session is not None:
            raise click.UsageError("--all shows every session: it takes no --session")
        _log_all(ctx, count, stat, graph, no_pager, as_json)
        return
    workspace = ctx.workspace()
    name = history_session(ctx, session)
    log = workspace.log(name, n=count)
    turns = workspace.turns(name, n=count) if stat else []
    body = log_json(workspace, log, turns)
    colored, width = want_color("auto"), columns()

    def plain() -> str:
        lines = []
        for i, p in enumerate(log.undo):
            # --stat looked at the files: it knows whether an open turn changed any
            lines.append(_point_line("undo", turns[i].span.number if stat else log.turns[i], p))
            if stat:
                lines += call_lines(p)
                lines.append(_stat_text(workspace, turns[i].changes, colored, width))
        lines += [_point_line("redo", i, p) for i, p in enumerate(log.redo, 1)]
        return "\n".join(lines)

    with paged(not no_pager and not as_json):
        _emit_listing(ctx, body, as_json, plain,
                      None if log.undo or log.redo
                      else f"undostore: session {log.session!r} has no undo points")


def _log_all(ctx: Context, count: int | None, stat: bool, graph: bool, no_pager: bool,
             as_json: bool) -> None:
    from .timeline import timeline_json, timeline_text

    workspace = ctx.workspace()
    turns = workspace.timeline(count)
    colored, width = want_color("auto"), columns()

    def plain() -> str:
        return timeline_text(turns, graph, (lambda changes: _stat_text(
            workspace, changes, colored, width)) if stat else None)

    with paged(not no_pager and not as_json):
        _emit_listing(ctx, timeline_json(workspace, turns), as_json, plain,
                      None if turns else "undostore: no session has undo points")


def _stat_text(workspace: Workspace, changes: list[Change], colored: bool, width: int) -> str:
    """git's --stat of one turn (indented as `git log --stat` shows it), or a note."""
    from undostore import GIT_COLORS, PLAIN, render

    if not changes:
        return "    (no file changed)\n"
    text = b"".join(render("stat", workspace.store, changes, GIT_COLORS if colored else PLAIN,
                           width))
    return text.decode("utf-8", "replace")


def _undo_or_redo(ctx: Context, direction: Direction, session: str | None, yes: bool,
                  dry_run: bool, as_json: bool, patch: bool = False, **how: Any) -> None:
    from .restore import note_warnings, run_restore

    workspace = ctx.workspace()
    which = direction.value
    session = history_session(ctx, session, doing=f"nothing to {which}: ")
    paths = given_paths(workspace.root)
    if patch:
        how["picks"] = _picked_hunks(workspace, direction, session, paths, how)
        if not how["picks"]:
            note(f"{which}: no hunk picked; nothing was changed")
            return
        yes = True   # each hunk was asked about: that is the question
    result = run_restore(functools.partial(workspace.step, direction, session,
                                           paths=paths or None, **how),
                         yes=yes, dry_run=dry_run, action=which)
    note_warnings(result.warnings)
    emit(as_json, result.to_json(), lambda: step_summary(result))
    if result.conflicts and not result.dry_run:
        sys.exit(3)   # markers remain: not done until the user resolves them


def _picked_hunks(workspace: Workspace, direction: Direction, session: str,
                  paths: list[str], how: dict[str, Any]) -> list[Any]:
    """`-p`: each file's change the step would take asked about hunk by hunk
    (cli/commands/hunk_prompt.py); what was picked, as the step takes it."""
    from .hunk_prompt import Question, ask

    if how.get("whole"):
        raise click.UsageError("--whole puts the whole folder back: it takes no -p")
    held = workspace.step_files(direction, session, paths=paths or None,
                                **{k: how[k] for k in ("steps", "to", "turn", "call") if k in how})
    questions = []
    last = None
    for file in held:
        heading = ""
        if file.turn.id != last and len({f.turn.id for f in held}) > 1:
            heading = f"# turn {file.turn.label or file.turn.id[:12]!r} ({file.turn.id[:12]})"
        last = file.turn.id
        questions.append(Question(file.change, heading))
    answers = ask(questions, "Undo" if direction is Direction.UNDO else "Redo",
                  back=direction is Direction.UNDO)
    return [file.pick(workspace.store, answer, direction)
            for file, answer in zip(held, answers, strict=True) if answer.anything]


def step_summary(result: StepResult) -> str:
    """`undo: took back "fix the lexer" (1 turn; 3 files)`, the conflicts left with markers,
    and the way back."""
    import json

    from undostore import conflict_notes

    direction = Direction(result.step)
    which = direction.value
    named = "; ".join(json.dumps(p.label, ensure_ascii=False) if p.label else p.id[:12]
                      for p in result.turns[:3]) + ("; ..." if len(result.turns) > 3 else "")
    done, would = (("put the whole folder back to before ", "put the whole folder back to "
                    "before ") if result.whole else
                   ("took back ", "take back ") if direction is Direction.UNDO else
                   ("applied again ", "apply again "))
    counts = result.counts()
    git = [f"note: {result.git_moved.advice()}"] if result.git_moved else []
    if result.dry_run:
        lines = result.plan.lines() if result.plan is not None else []
        return "\n".join([*lines, f"dry run: {which} would {would}{named} ({counts}); "
                                  "nothing was changed", *git])
    back = direction.back.value
    lines = [f"{which}: {done}{named} ({counts})"]
    if result.taken_paths():
        lines.append(_part_line(result))
    lines += [f"conflict: {note}" for note in conflict_notes(result.conflicts, result.unmarked)]
    undoes = ("`undostore redo` applies this session's turns again, not the other changes it "
              "took back" if result.whole else f"`undostore {back}` takes the turns back")
    lines.append(f"safety snapshot {result.safety} (`undostore restore {result.safety[:12]}` "
                 f"puts the files back as they were; {undoes})")
    return "\n".join([*lines, *git])


def _part_line(result: StepResult) -> str:
    """What a step of some paths took, and where the rest of its turns is."""
    took = result.taken_paths()
    shown = ", ".join(took[:5]) + (f" and {len(took) - 5} more" if len(took) > 5 else "")
    if Direction(result.step) is Direction.UNDO:
        return (f"part of a turn: {shown}; the rest stays on the undo stack (`undostore undo` "
                "takes it back)")
    return (f"part of a turn: {shown}; the rest stays undone (`undostore redo` applies it "
            "again)")


_STEPS = click.argument("steps", metavar="[N]", type=click.IntRange(min=1), default=1,
                        required=False)
_MERGE = click.option("--merge", is_flag=True,
                      help="Where a turn overlaps a later change, write git-style conflict "
                           "markers (exit 3 while they remain) instead of refusing.")
_PATCH = click.option(
    "-p", "--patch", "patch", is_flag=True,
    help="Ask about each hunk of the change first (y, n, q, a, d, s, e, ?, as `git checkout -p` "
         "asks) and take only the hunks picked.")
_KEEP_DOUBTFUL = click.option(
    "--keep-doubtful", is_flag=True,
    help="Leave as they are the files whose change is in doubt (they changed while another "
         "conversation's call ran too) and take back the rest, instead of refusing.")


@click.command("undo", cls=TakesPaths)
@_STEPS
@click.option("--to", "to", metavar="ID", default=None, shell_complete=complete_ids,
              help="Take back every turn back to undo point ID (as `log` lists it) instead of "
                   "N turns.")
@click.option("--turn", "turn", metavar="K", type=click.IntRange(min=1), default=None,
              help="Take back turn K alone (as `log` numbers them: 1 is the last) and keep the "
                   "later turns.")
@click.option("--call", "call", metavar="N", type=click.IntRange(min=1), default=None,
              help="Take back tool call N of the turn (the last, or --turn K) alone, as `show` "
                   "numbers its calls.")
@_MERGE
@_KEEP_DOUBTFUL
@_PATCH
@click.option("--whole", is_flag=True,
              help="Put the whole folder back to the undo point (every later change too, the "
                   "user's and other sessions'), instead of the turns' own changes.")
@session_option
@yes_option
@dry_run_option
@json_option
@pass_context
def undo_command(ctx: Context, steps: int, to: str | None, turn: int | None,
                 call: int | None, merge: bool, keep_doubtful: bool, patch: bool, whole: bool,
                 session: str | None, yes: bool, dry_run: bool, as_json: bool) -> None:
    """Take back the session's last N turns (default 1), each turn's own change.

    Each file the turns changed is merged 3-way against the files now, as `git revert` does:
    every other change since stays (yours, other sessions'). A later change that overlaps a
    turn's is a conflict: nothing changes (exit 3, each path named) unless --merge (conflict
    markers) or --whole (the whole folder back to the undo point). A safety snapshot of the
    files is taken first. The undone turns go to the redo stack; `redo` applies them again.
    With `-- PATH...` (files, folders or globs) only those paths of the turns' change are taken
    back; the rest of each turn stays on the undo stack. `--turn K` takes back turn K alone (a
    middle one too) and keeps the later turns; `--call N` one tool call of it (`show` numbers
    them). `-p` asks about each hunk of the change first, as `git checkout -p` does, and
    takes back the hunks picked; the rest stays on the undo stack.
    """
    if sum((to is not None, steps != 1, turn is not None)) > 1:
        raise click.UsageError("give one of N, --to ID and --turn K")
    if merge and whole:
        raise click.UsageError("give --merge or --whole, not both")
    _undo_or_redo(ctx, Direction.UNDO, session, yes, dry_run, as_json, patch, steps=steps,
                  to=to, turn=turn, call=call, merge=merge, whole=whole,
                  keep_doubtful=keep_doubtful)


@click.command("redo", cls=TakesPaths)
@_STEPS
@_MERGE
@_KEEP_DOUBTFUL
@_PATCH
@session_option
@yes_option
@dry_run_option
@json_option
@pass_context
def redo_command(ctx: Context, steps: int, merge: bool, keep_doubtful: bool, patch: bool,
                 session: str | None, yes: bool, dry_run: bool, as_json: bool) -> None:
    """Apply the session's last N undone turns again (default 1), 3-way as undo takes them back.

    With `-- PATH...` only those paths of the undone turns' change are applied again; with
    `-p` only the hunks picked of it (asked about one by one).
    """
    _undo_or_redo(ctx, Direction.REDO, session, yes, dry_run, as_json, patch, steps=steps,
                  merge=merge, keep_doubtful=keep_doubtful)


@click.command("sessions")
@json_option
@pass_context
@read_only(lambda options: sessions_json([]))
def sessions_command(ctx: Context, as_json: bool) -> None:
    """List the sessions of this store with their numbers of undo and redo entries."""
    infos = ctx.workspace().sessions()
    _emit_listing(ctx, sessions_json(infos), as_json,
                  lambda: "\n".join(f"{s.name}  undo {s.undo}  redo {s.redo}" for s in infos),
                  None if infos else "undostore: no sessions")


@click.command("drop")
@named_session_option
@json_option
@pass_context
def drop_command(ctx: Context, session: str | None, as_json: bool) -> None:
    """Forget a session: its journal and its anchors (gc then frees what only it kept).

    The session must be named (--session or $UNDOSTORE_SESSION): dropping the 'default'
    session by accident would be a loss.
    """
    from undostore.settings import named_session

    session = named_session(session)
    if session is None:
        raise click.UsageError("drop needs --session NAME (the session to forget)")
    ctx.workspace().require_session(session)   # none: exit 2, listing the sessions
    dropped = ctx.workspace().drop(session)
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
@read_only(lambda options: {"ok": True, "missing": [], "corrupt": []})
def verify_command(ctx: Context, snapshot_id: str | None, repair: bool, as_json: bool) -> None:
    """Check that every object the journals (or snapshot ID) need is present and intact.

    Exit code 3 when something is missing or damaged; each problem is listed with its snapshot
    and path.
    """
    from undostore import IncompleteSnapshotError

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
