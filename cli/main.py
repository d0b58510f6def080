"""Entry point of the `undostore` command; maps library errors to exit codes in one place."""

from __future__ import annotations

import json
import os
import sys

import click

from .common import Context


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
# Paths are checked by the library, whose messages name them as the system spells them.
@click.option("--root", metavar="DIR", default=None,
              help="Folder to protect (default: the current folder).")
@click.option("--store", metavar="DIR", default=None, envvar="UNDOSTORE_STORE",
              help="Store folder (default: $UNDOSTORE_HOME/stores/<hash of root>).")
@click.option("--force", is_flag=True, help="Allow the home folder or / as root.")
@click.version_option(package_name="undostore")
@click.pass_context
def cli(click_ctx: click.Context, root: str | None, store: str | None, force: bool) -> None:
    """Undo and redo for the files under a folder, with git-compatible snapshots."""
    click_ctx.obj = Context(root, store, force)


def _register() -> None:
    from . import cmd_snapshot

    cli.add_command(cmd_snapshot.snapshot_command)
    for module_name in ("cmd_diff", "cmd_restore", "cmd_revert", "cmd_sessions"):
        try:
            module = __import__(f"undostore_cli.{module_name}", fromlist=["COMMANDS"])
        except ModuleNotFoundError as err:
            if err.name != f"undostore_cli.{module_name}":
                raise
            continue
        for command in module.COMMANDS:
            cli.add_command(command)


_register()


def _fail(as_json: bool, code: int, kind: str, message: str, path: str | None = None,
          conflicts: list[str] | None = None) -> None:
    """End with `code`; with --json, stdout still gets exactly one JSON object (the error, and
    the conflicting paths of a refused revert)."""
    if as_json:
        error = {"type": kind, "message": message, "path": path}
        doc = {"error": error, "exit_code": code}
        if conflicts is not None:
            doc["conflicts"] = conflicts
        sys.stdout.write(json.dumps(doc) + "\n")
    sys.exit(code)


def main(argv: list[str] | None = None) -> None:
    from undostore.errors import UndostoreError

    args = sys.argv[1:] if argv is None else argv
    as_json = "--json" in args[: args.index("--")] if "--" in args else "--json" in args
    try:
        cli.main(args=argv, prog_name="undostore", standalone_mode=False)
    except click.exceptions.Abort:
        click.echo("undostore: aborted", err=True)
        _fail(as_json, 1, "Aborted", "aborted")
    except click.ClickException as err:
        err.show()
        _fail(as_json, err.exit_code, "UsageError", err.format_message())
    except UndostoreError as err:
        click.echo(f"undostore: error: {err}", err=True)
        _fail(as_json, err.exit_code, type(err).__name__, err.message, err.path,
              getattr(err, "conflicts", None))
    except OSError as err:
        # The library turns the OSErrors it expects into UndostoreError; one that slips through
        # still gets the path and the cause, not a traceback.
        where = f"{err.filename}: " if err.filename else ""
        click.echo(f"undostore: error: {where}{err.strerror or err}", err=True)
        _fail(as_json, 1, type(err).__name__, str(err.strerror or err),
              os.fsdecode(err.filename) if err.filename else None)
    except KeyboardInterrupt:
        click.echo("undostore: interrupted", err=True)
        _fail(as_json, 130, "Interrupted", "interrupted")
    sys.exit(0)


if __name__ == "__main__":
    main()
