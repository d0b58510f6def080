"""`undostore hook`: the entry for agent-host hooks (Claude Code and hosts like it).

One JSON event on stdin. On `UserPromptSubmit`: an undo point in session `session_id` for the root
found from `cwd`, labelled with the prompt's first line. Other events change nothing. stdout stays
empty (hosts feed it to the model); a failure is one line on stderr and exit 1, never 2 (exit 2
would drop the user's prompt).
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

import click

from .common import Context, pass_context, stdin_is_terminal

LABEL_CHARS = 80
RECORDING_EVENTS = frozenset({"UserPromptSubmit"})


class HookFailure(Exception):
    """A bad event: the message is the one stderr line."""


def read_event(raw: bytes) -> dict[str, Any]:
    """The event object from stdin's bytes; HookFailure saying what is wrong with it."""
    if not raw.strip():
        raise HookFailure("no hook event on stdin (expected one JSON object)")
    try:
        event = json.loads(raw.decode("utf-8-sig"))
    except (UnicodeDecodeError, ValueError) as err:
        raise HookFailure(f"the hook event on stdin is not JSON: {err}") from None
    if not isinstance(event, dict):
        raise HookFailure(f"the hook event on stdin is not a JSON object "
                          f"(got {type(event).__name__})")
    name = event.get("hook_event_name")
    if not isinstance(name, str) or not name:
        raise HookFailure("the hook event has no hook_event_name")
    return event


def label_of(prompt: object) -> str | None:
    """The prompt's first non-blank line, cut at 80 characters (None for no prompt)."""
    if not isinstance(prompt, str):
        return None
    for line in prompt.splitlines():
        if line.strip():
            return line.strip()[:LABEL_CHARS]
    return None


def _text(event: dict[str, Any], key: str) -> str | None:
    value = event.get(key)
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise HookFailure(f"the hook event's {key} is not text: {value!r}")
    return value


def record_prompt(ctx: Context, event: dict[str, Any]) -> None:
    """The undo point for a submitted prompt (one library call)."""
    from undostore import Workspace
    from undostore.store.discover import discover

    cwd = _text(event, "cwd")
    if cwd is not None and not os.path.isdir(cwd):
        raise HookFailure(f"{cwd}: the hook event's cwd is not a folder")
    store = ctx.store or os.environ.get("UNDOSTORE_STORE") or None
    root = ctx.root or discover(cwd, store, force=ctx.force).root
    session = _text(event, "session_id")  # else $UNDOSTORE_SESSION, else "default"
    with Workspace(root, store, force=ctx.force) as workspace:
        workspace.snapshot(session=session or "", label=label_of(event.get("prompt")))


@click.command("hook", context_settings={"ignore_unknown_options": True,
                                         "allow_extra_args": True})
@click.option("--json", "as_json", is_flag=True, hidden=True)
@pass_context
@click.pass_context
def hook_command(click_ctx: click.Context, ctx: Context, as_json: bool) -> None:
    """Read one agent-host hook event (JSON) on stdin; on UserPromptSubmit, record an undo point.

    Wire it into Claude Code's settings.json as a UserPromptSubmit hook running `undostore hook`:
    each prompt then gets an undo point (session: the host's session_id, label: the prompt's
    first line), and `undostore undo` takes the files back to before the last prompt. Prints
    nothing on stdout; a failure is one line on stderr and exit 1 (never 2, which would drop
    the prompt).
    """
    ctx.quiet = True
    try:
        if click_ctx.args:
            raise HookFailure(f"hook takes no arguments (got {' '.join(click_ctx.args)})")
        if stdin_is_terminal():
            raise HookFailure("hook reads one hook event (JSON) on stdin, sent by an agent host")
        event = read_event(sys.stdin.buffer.read())
        if event["hook_event_name"] in RECORDING_EVENTS:
            record_prompt(ctx, event)
    except BaseException as err:  # noqa: BLE001 (a hook must end with exit 0 or 1, whatever)
        _fail(err)
    sys.exit(0)


def _fail(err: BaseException) -> None:
    if isinstance(err, SystemExit) and not err.code:
        sys.exit(0)
    if isinstance(err, OSError) and err.strerror:
        where = f"{os.fsdecode(err.filename)}: " if err.filename else ""
        message = f"{where}{err.strerror}"
    elif isinstance(err, KeyboardInterrupt):
        message = "interrupted"
    elif isinstance(err, click.ClickException):
        message = err.format_message()
    else:
        message = str(err) or type(err).__name__
    line = " ".join(message.split())
    try:
        sys.stderr.write(f"undostore: error: hook: {line}\n")
        sys.stderr.flush()
    except (OSError, ValueError):
        pass  # no stderr to write to: the exit code still says it failed
    sys.exit(1)


COMMANDS = [hook_command]
