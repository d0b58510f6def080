"""`undostore diff FROM [TO]`: what changed, in git's formats (or one JSON object)."""

from __future__ import annotations

import os
import sys
from typing import Any

import click

from ..common import (
    Context,
    TakesPaths,
    given_paths,
    history_session,
    json_option,
    pass_context,
    read_only,
    session_option,
)
from ..complete import complete_ids
from ..pager import no_pager_option, paged
from ..plain import json_text
from ..results import compare_json, turn_diff_json
from ..textout import columns, want_color, write_changes


@click.command("diff", cls=TakesPaths)
@click.argument("from_id", metavar="[FROM]", required=False, shell_complete=complete_ids)
@click.argument("to_id", metavar="[TO]", required=False, shell_complete=complete_ids)
@click.option("--name-only", is_flag=True, help="Only the path of each change.")
@click.option("--name-status", is_flag=True,
              help="Status letter and path of each change (the default).")
@click.option("--numstat", is_flag=True,
              help="Added and removed line counts per file ('-' for binary files).")
@click.option("--stat", is_flag=True, help="git's diffstat graph and summary.")
@click.option("--patch", "-p", is_flag=True, help="The changes as a unified diff.")
@click.option("-U", "--unified", "context", type=click.IntRange(min=0), default=None,
              metavar="N", help="The patch with N lines of context (default 3); implies -p.")
@click.option("--exit-code", is_flag=True,
              help="Exit 1 when there are changes, 0 when there are none (as git's).")
@click.option("--find-renames", "-M", is_flag=True,
              help="Report a deleted and an added file that are at least 50% alike as a rename.")
@click.option("--color", "color", type=click.Choice(["auto", "always", "never"]),
              default="auto", is_flag=False, flag_value="always", show_default=True,
              help="Colour the output (auto: only on a terminal).")
@click.option("--turn", "turn", type=click.IntRange(min=1), default=None, metavar="N",
              help="What turn N of the session changed (1: the last turn), as `show N` "
                   "lists it; instead of FROM and TO.")
@session_option
@no_pager_option
@json_option
@pass_context
@read_only(None)
def diff_command(ctx: Context, from_id: str | None, to_id: str | None,
                 name_only: bool, name_status: bool, numstat: bool, stat: bool, patch: bool,
                 context: int | None, exit_code: bool, find_renames: bool, color: str,
                 turn: int | None, session: str | None, no_pager: bool, as_json: bool) -> None:
    """Show what changed from snapshot FROM to snapshot TO (default: the files now).

    Output matches `git diff-tree -r --no-renames` with the same flag on the same two trees.
    Limit it to some paths with `-- PATH...` (files, folders or globs; relative to the current
    folder when it is inside the root). Comparing with the files now takes a snapshot of them
    that no session records. `--turn N` compares what turn N of the session (--session) began
    with and the files after it. Format flags combine as in git: --name-only and --name-status
    stand alone; otherwise --numstat, then --stat, then the patch (-p, -U N). On a terminal,
    long output goes through a pager.
    """
    forms = _forms(name_only, name_status, numstat, stat, patch or context is not None)
    workspace = ctx.workspace()
    paths = given_paths(workspace.root)
    if turn is not None:
        if from_id is not None:
            raise click.UsageError("--turn takes no FROM or TO (the turn gives both)")

        shown = workspace.show(turn, session=history_session(ctx, session), paths=paths or None)
        changes = shown.changes

        def payload() -> dict[str, Any]:
            return turn_diff_json(workspace.store, shown)
    elif from_id is None:
        raise click.UsageError("missing FROM (a snapshot id), or pass --turn N")
    else:
        if session is not None:
            raise click.UsageError("--session goes with --turn")
        result = workspace.compare(from_id, to_id, paths=paths or None,
                                   find_renames=find_renames)
        changes = result.changes

        def payload() -> dict[str, Any]:
            return compare_json(workspace.store, result)
    try:
        if as_json:
            _write_json(payload())
        else:
            colored, width = want_color(color), columns()
            with paged(not no_pager):
                for at, form in enumerate(forms):
                    if at and form == "patch" and changes:
                        sys.stdout.buffer.write(b"\n")   # git's blank line before the patch
                    write_changes(form, workspace.store, changes, colored, width,
                                  3 if context is None else context)
    except BrokenPipeError:
        # The reader went away (`| head`): stop quietly, as git does.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        sys.exit(141 if os.name != "nt" else 1)
    if exit_code and changes:
        sys.exit(1)


def _forms(name_only: bool, name_status: bool, numstat: bool, stat: bool,
           patch: bool) -> list[str]:
    """The forms to print, in git's order: a name form alone, else numstat, stat, patch;
    nothing asked: --name-status."""
    if name_only or name_status:
        return ["name-only" if name_only else "name-status"]
    forms = [f for f, on in (("numstat", numstat), ("stat", stat), ("patch", patch)) if on]
    return forms or ["name-status"]


def _write_json(payload: dict[str, Any]) -> None:
    import json

    text = json_text(payload)
    try:
        data = text.encode("utf-8")
    except UnicodeEncodeError:
        # A file name that is not UTF-8 holds surrogate escapes; \\u escapes keep the JSON valid
        # and give back the exact name to a reader that decodes it like os.fsdecode.
        data = json.dumps(payload).encode("ascii")
    sys.stdout.buffer.write(data + b"\n")
    sys.stdout.buffer.flush()


COMMANDS = [diff_command]
