"""What every command shares: the workspace from global options, JSON or plain output, errors.

Library errors become exit codes in exactly one place (`main.main`); commands only raise.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from typing import Any, TypeVar

import click

from .complete import complete_sessions
from .plain import adoption_line

F = TypeVar("F", bound=Callable[..., Any])


class Context:
    """Global options, and the workspace opened lazily from them."""

    def __init__(self, root: str | None, store: str | None, force: bool = False) -> None:
        self.root = root or None  # None: found from the current folder (undostore.discover)
        self.store = store
        self.force = force
        self.quiet = False  # `hook` and `mcp` keep stderr for failures only
        self.read_only = False  # a command that only reads makes no store (`read_only`)
        self._workspace = None

    def workspace(self):  # noqa: ANN201 (undostore.Workspace; imported lazily for start-up time)
        if self._workspace is None:
            from undostore import Workspace

            from .signals import process_cancel

            self._workspace = Workspace(self.root, self.store, force=self.force,
                                        create=not self.read_only)
            self._workspace.cancel = process_cancel()   # set by SIGINT, SIGTERM (signals.py)
            # A restore a crash left half-done is finished by whatever command comes next:
            # say so, and how to roll it back instead.
            self._workspace.on_recovery = lambda pending: note(
                f"undostore: {pending.finishing_notice()}")
            if not self.quiet:
                self._workspace.on_evict = _note_eviction
            if self._workspace.store.trust_note:
                note(f"undostore: note: {self._workspace.store.trust_note}")
            discovery = self._workspace.discovery
            adopted = self._workspace.adopted
            if adopted is not None:
                note(adoption_line(adopted))
                return self._workspace
            if discovery.worth_saying and not self.quiet:
                note(discovery.describe())
            if not discovery.existed:
                _note_orphans(self._workspace.store.path)
        return self._workspace


def project_root(ctx: Context) -> str:
    """The root the global options name, else the one found from the current folder (as the
    workspace would find it), without opening or making a store (`init`, `doctor`)."""
    from undostore.store.discover import discover

    store = ctx.store or os.environ.get("UNDOSTORE_STORE") or None
    return ctx.root or discover(None, store, force=ctx.force).root


def _note_orphans(new_store: str) -> None:
    """A new store was just made: name the stores whose root is gone (a moved project's)."""
    from undostore.history.stores import orphans

    for path in orphans():
        if path != new_store:
            from undostore.store.store import recorded_root

            note(f"undostore: note: store {path} protects {recorded_root(path)}, which no longer "
                 "exists; if this project moved from there, `undostore rebind` here takes its "
                 "history along")


def _note_eviction(eviction: Any) -> None:
    why = ("older than UNDOSTORE_KEEP_DAYS" if eviction.reason == "keep_days"
           else "to keep the store under UNDOSTORE_MAX_STORE_MB")
    note(f"undostore: dropped undo point {eviction.id[:12]} of session {eviction.session!r} "
         f"({why})")


pass_context = click.make_pass_decorator(Context)


def read_only(empty: Callable[[dict[str, Any]], dict[str, Any]] | None) -> Callable[[F], F]:
    """For a command that only reads (log, show, diff, ops, sessions, verify): in a folder no
    store protects it makes none; it says so on stderr and prints what `empty(options)` gives
    (nothing recorded: an empty list; it may raise, as for a named session), or, with `empty`
    None, the error (exit 2: no id to look up)."""

    def wrap(command: F) -> F:
        import functools

        @functools.wraps(command)
        def run(ctx: Context, *args: Any, **kwargs: Any) -> Any:
            from undostore.errors import NoStoreError

            ctx.read_only = True
            try:
                return command(ctx, *args, **kwargs)
            except NoStoreError as err:
                if empty is None:
                    raise
                payload = empty(kwargs)
                note(f"undostore: {err.message}")
                emit(bool(kwargs.get("as_json")), payload, None)
                return None
        return run  # type: ignore[return-value]
    return wrap


def json_option(f: F) -> F:
    return click.option("--json", "as_json", is_flag=True,
                        help="Print exactly one JSON object on stdout.")(f)


def _session_flag(help_text: str) -> Callable[[F], F]:
    return click.option("--session", "-s", metavar="NAME", default=None,
                        shell_complete=complete_sessions, help=help_text)


session_option = _session_flag("Session (undo history); default: $UNDOSTORE_SESSION, else the "
                               "session with the newest undo point.")
# For a command that never picks a session itself (drop).
named_session_option = _session_flag("Session (undo history): this or $UNDOSTORE_SESSION is "
                                     "required.")


def dry_run_option(f: F) -> F:
    return click.option("--dry-run", "-n", is_flag=True,
                        help="Show what would change; change nothing.")(f)


def yes_option(f: F) -> F:
    return click.option("--yes", "-y", is_flag=True,
                        help="Do it without asking (needed when there is no terminal).")(f)


def emit(as_json: bool, payload: dict[str, Any], plain: str | Callable[[], str] | None) -> None:
    """Write the result: one JSON object, or plain text for people."""
    if as_json:
        sys.stdout.write(json.dumps(payload, ensure_ascii=False, default=str) + "\n")
        return
    text = plain() if callable(plain) else plain
    if text:
        sys.stdout.write(text if text.endswith("\n") else text + "\n")


def note(message: str) -> None:
    """A message for people (stderr), never mixed into results."""
    click.echo(message, err=True)


def note_damage(workspace) -> None:  # noqa: ANN001 (undostore.Workspace)
    """One line on stderr for each session whose journal was damaged, with the ways out."""
    for line in workspace.damage_notes():
        note(f"undostore: warning: {line}")


def stderr_is_terminal() -> bool:
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):
        return False


def history_session(ctx: Context, session: str | None, doing: str = "") -> str:
    """The session a history command acts on; named on stderr when it was chosen as the one
    with the newest undo point (no --session, no $UNDOSTORE_SESSION). A --session naming no
    session is a usage error that lists the sessions (`doing` starts its message)."""
    if session is not None:
        ctx.workspace().require_session(session, doing)
    name, chosen = ctx.workspace().history_session(session)
    if chosen:
        note(f"undostore: session {name!r} (newest undo point)")
    return name
