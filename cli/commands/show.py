"""`undostore show [N|ID]`: one turn, its label, time and what it changed (git's stat or patch)."""

from __future__ import annotations

import sys
import time
from typing import TYPE_CHECKING

import click

from ..common import (
    Context,
    emit,
    history_session,
    json_option,
    pass_context,
    read_only,
    session_option,
)
from ..complete import complete_ids
from ..pager import no_pager_option, paged
from ..results import show_json
from ..textout import call_lines, columns, part_note, want_color, write_changes

if TYPE_CHECKING:
    from undostore.history.turns import Turn

# A turn number has at most this many digits; anything longer is an id prefix (4+ hex).
_MAX_NUMBER_DIGITS = 3
_ENDS = {"after": "the files after the turn", "next": "the next undo point",
         "now": "the turn is the last one; not recorded: `undostore snapshot` does that"}


def _which(ref: str | None) -> tuple[int | None, str | None]:
    """(N, None) for a turn number, (None, ID) for an undo point's id or prefix."""
    if ref is None:
        return 1, None
    if ref.isdigit() and len(ref) <= _MAX_NUMBER_DIGITS:
        if int(ref) < 1:
            raise click.UsageError("turns are counted from 1 (the last turn)")
        return int(ref), None
    return None, ref


@click.command("show")
@click.argument("ref", metavar="[N|ID]", required=False, shell_complete=complete_ids)
@session_option
@click.option("--patch", "-p", "patch", is_flag=True,
              help="The changes as a unified diff (default: git's diffstat).")
@click.option("--color", "color", type=click.Choice(["auto", "always", "never"]),
              default="auto", is_flag=False, flag_value="always", show_default=True,
              help="Colour the output (auto: only on a terminal).")
@no_pager_option
@json_option
@pass_context
@read_only(None)
def show_command(ctx: Context, ref: str | None, session: str | None, patch: bool, color: str,
                 no_pager: bool, as_json: bool) -> None:
    """Show one turn of the session: its label, when it began and what it changed.

    N counts from the newest turn (1, the default, is the last; up to 3 digits); ID names an
    undo point (4+ hex, as `log` shows it). A turn runs from its undo point to the files after
    it: what the host recorded when the turn ended, else the next undo point, else the files
    now. The changes print as `git diff --stat` would (--patch: the diff). On a terminal, long
    output goes through a pager.
    """

    number, point_id = _which(ref)
    workspace = ctx.workspace()
    turn = workspace.show(number, point_id, session=history_session(ctx, session))
    if as_json:
        emit(True, show_json(workspace.store, turn), None)
        return
    colored, width = want_color(color), columns()
    try:
        with paged(not no_pager):
            sys.stdout.write(_header(turn, colored))
            if turn.changes:
                write_changes("patch" if patch else "stat", workspace.store, turn.changes,
                              colored, width)
            else:
                sys.stdout.write("(the turn changed no file)\n")
            sys.stdout.flush()
    except BrokenPipeError:
        import os

        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        sys.exit(141 if os.name != "nt" else 1)


def _header(turn: Turn, colored: bool) -> str:
    """git show's head: the point (yellow, as git's commit line), its date, where the turn
    ran to, and the label indented."""
    point = turn.point
    first = (f"point {point.id} (turn {turn.span.number} of session {turn.span.session!r})"
             if turn.span.number is not None else
             f"point {point.id} (a turn of session {turn.span.session!r} that changed no file)")
    if colored:
        first = f"\033[33m{first}\033[m"
    when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(point.time))
    # The files now are looked at, not recorded (a read-only command): no id is handed out.
    to = turn.to_id if turn.span.end is not None else "the files now"
    lines = [first, f"Date:  {when}", f"To:    {to} ({_ENDS[turn.span.end_kind]})", ""]
    label = point.label or "(no label)"
    lines += [f"    {line}" for line in label.splitlines() or [label]]
    if point.partial:
        lines += ["", f"    {part_note(point)}"]
    if point.notes:   # the calls that made the changes, where the host reports them
        lines += ["", *call_lines(point)]
    return "\n".join(lines) + "\n\n"


COMMANDS = [show_command]
