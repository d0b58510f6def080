"""Entry point of the `undostore` command; maps library errors to exit codes in one place."""

from __future__ import annotations

import contextlib
import gc
import sys

import click

from undostore import __version__

from . import signals  # (before any command: a process may drop privileges, then import less)
from .common import Context
from .invocation import Invocation
from .plain import fail, fail_with, interrupted, unattended_settings


class _Interrupt(Exception):
    """A Ctrl-C carried past click (which would turn it into "Aborted!", exit 1)."""

    def __init__(self, original: KeyboardInterrupt) -> None:
        self.original = original
        super().__init__(str(original))


# Each command and the module that defines it (its COMMANDS list): a module is imported when one
# of its commands runs, or when help or completion lists them all, so `undo` pays for no other
# command's imports. tests/test_cli_process.py holds this table to the modules.
COMMAND_MODULES = {
    "snapshot": "commands.snapshot", "diff": "commands.diff", "restore": "commands.restore",
    "revert": "commands.revert", "log": "commands.sessions", "undo": "commands.sessions",
    "redo": "commands.sessions", "sessions": "commands.sessions", "drop": "commands.sessions",
    "gc": "commands.sessions", "verify": "commands.sessions", "rebind": "commands.stores",
    "stores": "commands.stores",
    "hook": "commands.hook", "status": "commands.status", "ops": "commands.status",
    "mcp": "commands.mcp",
    "init": "commands.init", "doctor": "commands.doctor",
    "show": "commands.show", "pick": "commands.pick",
}


class _Group(click.Group):
    def invoke(self, ctx: click.Context) -> object:
        try:
            return super().invoke(ctx)
        except KeyboardInterrupt as err:
            raise _Interrupt(err) from err

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*self.commands, *COMMAND_MODULES})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        module_name = COMMAND_MODULES.get(cmd_name)
        if cmd_name not in self.commands and module_name is not None:
            _load(module_name)
        return super().get_command(ctx, cmd_name)


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
# Paths are checked by the library, whose messages name them as the system spells them.
@click.option("--root", metavar="DIR", default=None,
              help="Folder to protect (default: found from the current folder, see above).")
@click.option("--store", metavar="DIR", default=None, envvar="UNDOSTORE_STORE",
              help="Store folder (default: $UNDOSTORE_HOME/stores/<hash of root>).")
@click.option("--force", is_flag=True, help="Allow the home folder or / as root.")
# The package's own version, not its installed metadata: a checkout on PYTHONPATH (the Windows
# lane) has none.
@click.version_option(version=__version__)
@click.pass_context
def cli(click_ctx: click.Context, root: str | None, store: str | None, force: bool) -> None:
    """Undo and redo for the files under a folder, with git-compatible snapshots.

    Every command takes --json (before or after the command name): stdout is then one JSON
    object, errors included. Without --root, the root is the nearest folder at or above the
    current one that has a store, else the top of the git work tree, else the current folder.
    NO_COLOR turns colour off. Shell completion: see the README ("Shell completion").
    """
    click_ctx.obj = Context(root, store, force)


def _load(module_name: str) -> None:
    """Add the commands of `undostore_cli.<module_name>` (none when that module is absent)."""
    try:
        module = __import__(f"undostore_cli.{module_name}", fromlist=["COMMANDS"])
    except ModuleNotFoundError as err:
        if err.name != f"undostore_cli.{module_name}":
            raise
        return
    for command in module.COMMANDS:
        cli.add_command(command)


def all_commands() -> dict[str, click.Command]:
    """Every command, its module imported (for help, completion and tests)."""
    for module_name in sorted(set(COMMAND_MODULES.values())):
        _load(module_name)
    return dict(cli.commands)


def _settings_checked(invocation: Invocation) -> contextlib.AbstractContextManager[None]:
    """Check every setting before the command runs: a bad one is exit 2, or, for what runs
    unattended, said once and the default used for the command's length."""
    from undostore import settings

    if invocation.command is None:
        return contextlib.nullcontext()   # help, --version: nothing to act on
    if not invocation.unattended:
        settings.check_all()
        return contextlib.nullcontext()
    return unattended_settings()


def _usage_line(err: click.ClickException) -> str:
    """click's usage errors in undostore's one error format, with where to find help."""
    message = err.format_message()
    if type(err).__name__ == "NoArgsIsHelpError":
        return message  # `undostore` alone: the help, as click shows it
    ctx = getattr(err, "ctx", None)
    if isinstance(err, click.UsageError) and ctx is not None:
        message += f" (see '{ctx.command_path} --help')"
    return f"undostore: error: {message}"


def main(invocation: Invocation | list[str] | None = None) -> None:
    """Run the command line (an `Invocation` the lean entry read, or the arguments)."""
    try:
        if not isinstance(invocation, Invocation):
            invocation = Invocation(sys.argv[1:] if invocation is None else invocation)
        _main(invocation)
    finally:
        # The process ends here: spare the interpreter's last full collection over every object
        # the command left (a snapshot's stat cache: docs/design.md, "Figures behind constants").
        gc.freeze()


def _main(invocation: Invocation) -> None:
    import warnings

    from .plain import one_line_warning

    warnings.showwarning = one_line_warning
    as_json = invocation.as_json
    try:
        from undostore import UndostoreError
    except KeyboardInterrupt as err:
        interrupted(as_json, err)
    # SIGINT and SIGTERM become a cancel request a restore answers itself (signals.py).
    with signals.cancel_on_signals():
        try:
            with _settings_checked(invocation):
                cli.main(args=invocation.for_click(), prog_name="undostore",
                         standalone_mode=False)
        except click.exceptions.Abort:
            click.echo("undostore: aborted", err=True)
            fail(as_json, 1, "Aborted", "aborted")
        except click.ClickException as err:
            click.echo(_usage_line(err), err=True)
            fail(as_json, err.exit_code, "UsageError", err.format_message())
        except (UndostoreError, OSError) as err:
            fail_with(as_json, err)
        except (KeyboardInterrupt, _Interrupt) as err:
            interrupted(as_json, err)
    sys.exit(0)


if __name__ == "__main__":
    main()
