"""`undostore snapshot`: capture the root; with --session, record an undo point."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

import click

from ..common import (
    Context,
    emit,
    json_option,
    note,
    pass_context,
    session_option,
    stderr_is_terminal,
)
from ..results import snapshot_json

if TYPE_CHECKING:
    from undostore.progress import Progress


class _ProgressLine:
    """A progress line on stderr, shown only on a terminal and only after the first second."""

    def __init__(self) -> None:
        self.started = time.monotonic()
        self.shown = False

    def __call__(self, progress: Progress) -> None:
        if time.monotonic() - self.started < 1.0:
            return
        click.echo(f"\rundostore: snapshot {progress.files_done:,}/{progress.files_total:,} files",
                   err=True, nl=False)
        self.shown = True

    def finish(self) -> None:
        if self.shown:
            click.echo("", err=True)


@click.command("snapshot")
@session_option
@click.option("--label", metavar="TEXT", default=None,
              help="Label of the undo point (with --session).")
@click.option("--max-files", type=click.IntRange(min=1), default=None,
              help="Refuse a root with more files than this (default: $UNDOSTORE_MAX_FILES, "
                   "else 1,000,000).")
@json_option
@pass_context
def snapshot_command(ctx: Context, session: str | None, label: str | None,
                     max_files: int | None,
                     as_json: bool) -> None:
    """Capture every file under the root that git would not ignore.

    Prints the snapshot id (git's tree id of the root). With --session (or $UNDOSTORE_SESSION
    set), the snapshot is also recorded as an undo point of that session.
    """
    from undostore import SnapshotOptions, no_progress
    from undostore.settings import named_session

    # $UNDOSTORE_SESSION names the session as --session does (the contract), so a host that
    # sets it gets undo points from a plain `undostore snapshot`.
    session = named_session(session)
    if label is not None and session is None:
        raise click.UsageError("--label needs --session (a label names an undo point)")
    workspace = ctx.workspace()
    progress = _ProgressLine() if stderr_is_terminal() and not as_json else None
    options = SnapshotOptions(max_files=max_files, force=ctx.force,
                              on_progress=progress or no_progress,
                              on_warning=lambda path, message: note(f"warning: {path}: {message}"))
    try:
        result = workspace.snapshot(session=session, label=label, options=options)
    finally:
        if progress:
            progress.finish()
    if session is not None and not result.recorded and not as_json:
        note("undostore: no new undo point: the files equal the newest one of the session")
    emit(as_json, snapshot_json(result), result.id)


COMMANDS = [snapshot_command]
