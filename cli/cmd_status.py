"""`undostore status`: one line for a host's footer (`undo:N redo:M`), kept fast."""

from __future__ import annotations

import click

from .common import Context, emit, json_option, note, pass_context, session_option


@click.command("status")
@session_option
@json_option
@pass_context
def status_command(ctx: Context, session: str | None, as_json: bool) -> None:
    """One line for a host's footer: `undo:N redo:M`, plus ` recovery_required` while an
    interrupted restore waits to be finished or rolled back.

    Reads only the session journals: cheap enough to run on every prompt render, and it never
    creates a store (a folder never protected shows undo:0 redo:0).
    """
    from undostore.history.status import status_at

    status = status_at(ctx.root, ctx.store, session, force=ctx.force)
    if status.chosen:
        note(f"undostore: session {status.session!r} (newest undo point)")
    emit(as_json, status.to_json(), status.line())


COMMANDS = [status_command]
