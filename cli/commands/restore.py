"""`undostore restore`: make the files equal to a snapshot, or roll an interrupted restore back.

Also the helpers every command that restores shares (`undo` and `redo` use them too):
`confirm_from_cli` turns `--yes` and the terminal into the library's `confirm` callback,
`run_restore` runs a restoring library call with it and the terminal progress, and
`render_restore` prints a RestoreResult as JSON or as a summary for people.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TYPE_CHECKING

import click

from ..common import (
    Context,
    TakesPaths,
    dry_run_option,
    emit,
    given_paths,
    json_option,
    note,
    pass_context,
    session_option,
    yes_option,
)
from ..complete import complete_ids
from ..plain import stdin_is_terminal
from ..progress import TerminalProgress

if TYPE_CHECKING:
    from undostore.restore.notices import RestoreWarning
    from undostore.restore.plan import RestorePlan
    from undostore.restore.restore import RestoreResult

PLAN_LINES_SHOWN = 50


def confirm_from_cli(yes: bool, *, action: str = "restore"
                     ) -> Callable[[RestorePlan], bool]:
    """The `confirm` callback of a command: yes with `--yes`; otherwise the plan is shown on
    stderr and the question asked on the terminal; with no terminal, ConfirmationNeeded (exit 2)
    saying to pass --yes. The library calls it only when there is something to change."""

    def confirm(plan: RestorePlan) -> bool:
        if yes:
            return True
        if not stdin_is_terminal():
            raise _needs_yes(action, plan)
        for line in plan.lines(limit=PLAN_LINES_SHOWN):
            note(f"  {line}")
        note(plan.summary())
        try:
            return click.confirm(f"{action.capitalize()} now?", default=False, err=True)
        except click.exceptions.Abort as err:
            # End of input: no one can answer (Windows reports the NUL device as a terminal).
            if isinstance(err.__context__, EOFError):
                raise _needs_yes(action, plan) from None
            raise

    return confirm


def run_restore(call: Callable[..., RestoreResult], *, yes: bool, dry_run: bool,
                action: str = "restore") -> RestoreResult:
    """`call(dry_run=, confirm=, on_progress=)`, a library call that restores (restore, revert,
    undo, redo), the CLI's way: asked on the terminal unless --yes or a dry run, with the
    progress on stderr paused while asking."""
    confirm = None if dry_run else confirm_from_cli(yes, action=action)
    with TerminalProgress.for_stderr() as progress:
        return call(dry_run=dry_run, confirm=progress.pausing(confirm),
                    on_progress=progress.listener)


def _needs_yes(action: str, plan: RestorePlan) -> Exception:
    from undostore import ConfirmationNeeded

    return ConfirmationNeeded(f"{action} would change files ({_counts(plan)}) and there is no "
                              "terminal to ask: pass --yes to do it")


def _counts(plan: RestorePlan) -> str:
    return (f"{len(plan.create)} to create, {len(plan.modified)} to modify, "
            f"{len(plan.delete)} to delete")


def note_warnings(warnings: list[RestoreWarning]) -> None:
    """Each warning of a restore on stderr: `warning: PATH: MESSAGE`."""
    for warning in warnings:
        note(f"warning: {warning.path}: {warning.message}")


def render_restore(result: RestoreResult, as_json: bool, *, verb: str = "restored") -> None:
    """Print a restore's result: one JSON object (`--json`), else a summary line on stdout;
    warnings go to stderr for people. `verb` names the action ("undone", "redone", ...)."""
    note_warnings(result.warnings)
    emit(as_json, result.to_json(), lambda: _plain(result, verb))


def _plain(result: RestoreResult, verb: str) -> str:
    if not result.target:  # an unreadable journal was set aside (see abort_pending)
        return "nothing was rolled back"
    counts = (f"{len(result.created)} created, {len(result.modified)} modified, "
              f"{len(result.deleted)} deleted")
    if result.dry_run:
        lines = result.plan.lines() if result.plan is not None else []
        head = [*lines, f"dry run: would make the files equal to {result.target} ({counts})"]
        return "\n".join(head)
    if not result.changed:
        return f"nothing to change: the files are already at {result.target}"
    return (f"{verb} {result.target}: {counts}\n"
            f"safety snapshot {result.safety} (restore it to take this back)")


@click.command("restore", cls=TakesPaths)
@click.argument("snapshot_id", metavar="[ID]", required=False, shell_complete=complete_ids)
@session_option
@dry_run_option
@yes_option
@click.option("--abort", is_flag=True,
              help="Roll an interrupted restore back to the safety snapshot taken before it.")
@click.option("-p", "--patch", "patch", is_flag=True,
              help="Ask about each hunk of the change from the files now to ID first (y, n, "
                   "q, a, d, s, e, ?, as `git checkout -p` asks) and restore only those picked.")
@json_option
@pass_context
def restore_command(ctx: Context, snapshot_id: str | None, session: str | None, dry_run: bool,
                    yes: bool, abort: bool, patch: bool, as_json: bool) -> None:
    """Make the files under the root equal to snapshot ID.

    A safety snapshot of the files is taken first (its id is printed, so the restore can be taken
    back), the snapshot is checked to be complete in the store, and a file changed after the
    safety snapshot is never overwritten. Ignored files, .git and the store are never touched.
    Without --yes the plan is shown and the question asked on a terminal. The files before it
    become an undo point of the session ("before restore ID"), so `undo` takes it back. With
    `-- PATH...` (files, folders or globs) only those files are restored; every other file
    stays as it is; with `-p` only the hunks picked. With --abort, an interrupted restore is
    rolled back instead (ID is not given then).
    """
    workspace = ctx.workspace()
    paths = given_paths(workspace.root)
    if abort:
        if snapshot_id is not None or dry_run or paths or patch:
            raise click.UsageError("--abort takes no ID, no paths, no -p and no --dry-run")
        result = workspace.abort_restore()
        if result is None:
            emit(as_json, {"aborted": False, "target": None, "safety": None, "created": [],
                           "modified": [], "deleted": []}, "no interrupted restore to roll back")
            return
        render_restore(result, as_json, verb="rolled back to")
        return
    if snapshot_id is None:
        raise click.UsageError("missing ID (the snapshot to restore), or pass --abort")
    picks = None
    if patch:
        from .hunk_prompt import ask_changes

        picks = ask_changes(workspace.restore_files(snapshot_id, paths or None), "Restore",
                            back=False, blobs=workspace.store)
        if not picks:
            note("restore: no hunk picked; nothing was changed")
            return
        yes = True   # each hunk was asked about: that is the question
    result = run_restore(functools.partial(workspace.restore, snapshot_id, session=session,
                                           paths=None if patch else paths or None,
                                           picks=picks),
                         yes=yes, dry_run=dry_run)
    render_restore(result, as_json, verb=f"restored {', '.join(paths)} from {snapshot_id}; "
                                         "the files are now at" if paths else "restored")


COMMANDS = [restore_command]
