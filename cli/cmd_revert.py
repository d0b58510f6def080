"""`undostore revert FROM [TO]`: take back one change, keeping every later one (3-way, per file).

Output as `restore`'s, plus the conflicting paths (`conflicts` in `--json`). Conflicts without
`--merge` are refused by the library (exit 3, every path named); `main` puts them in the JSON.
"""

from __future__ import annotations

import click

from .cmd_restore import confirm_from_cli, render_restore
from .common import Context, json_option, note, pass_context, yes_option
from .progress import TerminalProgress


@click.command("revert")
@click.argument("from_id", metavar="FROM")
@click.argument("to_id", metavar="[TO]", required=False)
@click.option("--dry-run", "-n", is_flag=True, help="Show what would change; change nothing.")
@yes_option
@click.option("--merge", is_flag=True,
              help="On conflicts, write git-style conflict markers instead of refusing.")
@json_option
@pass_context
def revert_command(ctx: Context, from_id: str, to_id: str | None, dry_run: bool, yes: bool,
                   merge: bool, as_json: bool) -> None:
    """Take back the change FROM -> TO on the files now, keeping every later change.

    Each file is merged 3-way as `git revert` does: lines the change did not touch keep their
    later edits. With only FROM, an undo point, TO is the next undo point of its session (the
    files now if it is the newest), so `revert ID` takes back one turn. A safety snapshot is
    taken first, as for restore. Conflicting paths are refused (exit 3) unless --merge.
    """
    confirm = None if dry_run else confirm_from_cli(yes, action="revert")
    with TerminalProgress.for_stderr() as progress:
        result = ctx.workspace().revert(from_id, to_id, merge=merge, dry_run=dry_run,
                                        confirm=progress.pausing(confirm),
                                        on_progress=progress.listener)
    if not as_json:
        for path in result.conflicts:
            note(f"conflict: {path}" + ("" if dry_run else " (merged with conflict markers)"))
    render_restore(result, as_json, verb="reverted; files now at")


COMMANDS = [revert_command]
