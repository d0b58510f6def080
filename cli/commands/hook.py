"""`undostore hook` as a click command: what `--help` and shell completion see. A plain hook call
never comes here (entry.py sends it to hosts/hook.py without importing click); a command line
click must parse does, and runs the same `hosts.hook.run`."""

from __future__ import annotations

import click

from ..common import Context, pass_context
from ..hosts.hook import run
from ..hosts.records import HOSTS
from ..plain import Options


@click.command("hook", context_settings={"ignore_unknown_options": True,
                                         "allow_extra_args": True})
@click.option("--host", "host_name", metavar="HOST", default=None,
              help=f"The host that runs the hook: {', '.join(HOSTS)} (default: found from the "
                   "event).")
@click.option("--json", "as_json", is_flag=True, hidden=True)
@pass_context
@click.pass_context
def hook_command(click_ctx: click.Context, ctx: Context, host_name: str | None,
                 as_json: bool) -> None:
    """Handle one agent-host hook event (JSON on stdin, or as the last argument).

    `undostore init HOST` wires it in. On the host's prompt event (Claude Code's
    UserPromptSubmit, Cursor's beforeSubmitPrompt, ...) it records an undo point in the host's
    session, labelled with the prompt's first line; a prompt that is /undo, /undo N or /redo is
    done instead and the host is told to show the result and not send the prompt on. On the
    after-turn event (Stop, stop, AfterAgent, agentStop, post_cascade_response) it records the
    files after the turn. stdout holds only what the host accepts; a failure is one line on
    stderr and exit 1 (never 2, which would drop the prompt).
    """
    run(Options(ctx.root, ctx.store, ctx.force), host_name, click_ctx.args)


COMMANDS = [hook_command]
