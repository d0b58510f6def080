"""`undostore revert FROM [TO]`: take back one change, keeping every later one (3-way, per file).

Output as `restore`'s, plus the conflicting paths (`conflicts` in `--json`). Conflicts without
`--merge` are refused by the library (exit 3, every path named); `main` puts them in the JSON.
"""

from __future__ import annotations

import functools
import sys

import click

from ..common import (
    Context,
    TakesPaths,
    dry_run_option,
    given_paths,
    json_option,
    note,
    pass_context,
    session_option,
    yes_option,
)
from .restore import render_restore, run_restore


@click.command("revert", cls=TakesPaths)
@click.argument("from_id", metavar="FROM")
@click.argument("to_id", metavar="[TO]", required=False)
@session_option
@dry_run_option
@yes_option
@click.option("--merge", is_flag=True,
              help="On conflicts, write git-style conflict markers instead of refusing.")
@click.option("-p", "--patch", "patch", is_flag=True,
              help="Ask about each hunk of the change first (y, n, q, a, d, s, e, ?, as `git "
                   "checkout -p` asks) and take back only those picked.")
@json_option
@pass_context
def revert_command(ctx: Context, from_id: str, to_id: str | None, session: str | None,
                   dry_run: bool, yes: bool, merge: bool, patch: bool, as_json: bool) -> None:
    """Take back the change FROM -> TO on the files now, keeping every later change.

    Each file is merged 3-way as `git revert` does: lines the change did not touch keep their
    later edits. With only FROM, an undo point, TO is where its turn ended (the files after it
    as the host recorded them, else the next undo point, else the files now), so `revert ID`
    takes back one turn. A safety snapshot is taken first, as for restore, and the files before
    become an undo point of the session ("before revert FROM"). Conflicting paths are refused
    (exit 3) unless --merge, which writes conflict markers and exits 3 while they remain. With
    `-- PATH...` (files, folders or globs) only those paths of the change are taken back; with
    `-p` only the hunks picked.
    """
    workspace = ctx.workspace()
    paths = given_paths(workspace.root) or None
    picks = None
    if patch:
        from .hunk_prompt import ask_changes

        picks = ask_changes(workspace.revert_files(from_id, to_id, session=session, paths=paths),
                            "Revert", back=True, blobs=workspace.store)
        if not picks:
            note("revert: no hunk picked; nothing was changed")
            return
        yes = True   # each hunk was asked about: that is the question
    result = run_restore(functools.partial(workspace.revert, from_id, to_id, session=session,
                                           merge=merge, paths=None if patch else paths,
                                           picks=picks),
                         yes=yes, dry_run=dry_run, action="revert")
    if not as_json:
        from undostore import conflict_notes

        for line in (result.conflicts if dry_run
                     else conflict_notes(result.conflicts, result.unmarked)):
            note(f"conflict: {line}")
    render_restore(result, as_json, verb="reverted; files now at")
    if result.conflicts and not result.dry_run:
        sys.exit(3)   # markers remain: not done until the user resolves them


COMMANDS = [revert_command]
