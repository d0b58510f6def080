"""What every command shares: the workspace from global options, JSON or plain output, errors.

Library errors become exit codes in exactly one place (`main.main`); commands only raise.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any, TypeVar

import click

from .complete import complete_sessions
from .door import Said, open_workspace
from .door import history_session as _history_session
from .plain import Options, json_text, root_relative

F = TypeVar("F", bound=Callable[..., Any])


class Context:
    """Global options, and the workspace opened lazily from them (door.py: what it says goes
    to stderr)."""

    def __init__(self, root: str | None, store: str | None, force: bool = False) -> None:
        self.root = root or None  # None: found from the current folder (undostore.discover)
        self.store = store
        self.force = force
        self.read_only = False  # a command that only reads makes no store (`read_only`)
        self._workspace = None

    @property
    def options(self) -> Options:
        return Options(self.root, self.store, self.force)

    def workspace(self):  # noqa: ANN201 (undostore.Workspace; imported lazily for start-up time)
        if self._workspace is None:
            self._workspace = open_workspace(self.options, say, create=not self.read_only)
        return self._workspace


def say(said: Said) -> None:
    """What the door says, as the command line says it: its line on stderr."""
    note(said.line)


def project_root(ctx: Context) -> str:
    """The root the global options name, else the one found from the current folder (as the
    workspace would find it), without opening or making a store (`init`, `doctor`)."""
    from undostore import discover

    return ctx.root or discover(None, ctx.options.named_store, force=ctx.force).root


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
            from undostore import NoStoreError

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
                               "session last acted on (its newest undo point, undo or redo).")
# For a command that never picks a session itself (drop).
named_session_option = _session_flag("Session (undo history): this or $UNDOSTORE_SESSION is "
                                     "required.")


_PATHS_KEY = "undostore.paths"


class TakesPaths(click.Command):
    """A command that takes `-- PATH...` after its own arguments (pathspecs as git takes them:
    files, folders or globs, relative to the current folder when it is inside the root). They
    are set aside before click reads the rest, so `diff A -- p` is never read as `diff A p`;
    `given_paths` reads them."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if "--" in args:
            at = args.index("--")
            ctx.meta[_PATHS_KEY] = args[at + 1:]
            args = args[:at]
        return super().parse_args(ctx, args)

    def collect_usage_pieces(self, ctx: click.Context) -> list[str]:
        return [*super().collect_usage_pieces(ctx), "[-- PATH...]"]


def given_paths(root: str) -> list[str]:
    """The paths given after `--` to the running `TakesPaths` command, relative to `root`
    (`plain.root_relative`); [] where none were given."""
    return root_relative(root, click.get_current_context().meta.get(_PATHS_KEY, []))


def dry_run_option(f: F) -> F:
    return click.option("--dry-run", "-n", is_flag=True,
                        help="Show what would change; change nothing.")(f)


def yes_option(f: F) -> F:
    return click.option("--yes", "-y", is_flag=True,
                        help="Do it without asking (needed when there is no terminal).")(f)


def emit(as_json: bool, payload: dict[str, Any], plain: str | Callable[[], str] | None) -> None:
    """Write the result: one JSON object, or plain text for people."""
    if as_json:
        sys.stdout.write(json_text(payload) + "\n")
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
    """The session a history command acts on (door.history_session), the choice said on
    stderr."""
    return _history_session(ctx.workspace(), session, say, doing)
