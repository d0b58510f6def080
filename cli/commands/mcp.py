"""`undostore mcp`: the Model Context Protocol server (needs the extra `undostore[mcp]`)."""

from __future__ import annotations

import click

from ..common import Context, pass_context


@click.command("mcp")
@click.option("--json", "as_json", is_flag=True, hidden=True)
@pass_context
def mcp_command(ctx: Context, as_json: bool) -> None:
    """Serve undostore's tools to an MCP client over stdin/stdout.

    Tools: snapshot, diff, undo, redo, restore, revert, log, status, ops, sessions; each returns
    what the command prints with --json (undo, redo, restore and revert do not ask, and take
    dry_run). The root is found from the server's working folder (or --root). A client passes
    the server only a few environment variables (HOME, PATH, ...): set UNDOSTORE_HOME in its
    config's `env` if the hooks use another. Needs the `mcp` package:
    pip install 'undostore[mcp]'.
    """
    try:
        from ..mcpserver.server import serve
    except ModuleNotFoundError as err:
        if not (err.name or "").startswith(("mcp", "anyio", "pydantic")):
            raise
        from ..install_hint import pip_install

        raise click.ClickException(
            f"the MCP server needs the `mcp` package ({err.name} is missing): "
            f"{pip_install('mcp')}") from None
    serve(ctx.options)

COMMANDS = [mcp_command]
