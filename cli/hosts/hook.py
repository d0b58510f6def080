"""`undostore hook`'s work, without click: the entry for agent-host hooks (Claude Code, Codex,
Cursor, Gemini CLI, Copilot CLI, Windsurf, Codex's `notify`, and the OpenCode and Pi plugins
`init` writes).

One event: JSON on stdin, or as the last argument (Codex's `notify`). The host is `--host H`, or
found from the event's shape (records.py holds every host's field names and stdout rules). A
prompt event records an undo point in the event's session for the root found from its folder,
labelled with the prompt's first line; a prompt that is `/undo`, `/undo N` or `/redo` is done
instead (cli/hosts/undo.py) and answered in the host's way of stopping a prompt. The after-turn
event records the files after the turn with the newest point. stdout holds only what the host
accepts; a failure is one line on stderr and exit 1, never 2 (exit 2 drops the user's prompt).

A host runs this on every prompt, so it is the leanest path of the command line: `entry.main`
sends `undostore hook ...` here without importing click (0.014 s of start-up) or any other
command; `commands/hook.py` is the click command `--help` and completion see, running the same
`run`.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, NamedTuple

from ..door import open_workspace
from ..plain import Options, stdin_is_terminal
from .once import event_key
from .records import (
    BLOCK_CONTINUE,
    BLOCK_EXIT_2,
    BLOCK_HANDLED,
    BLOCK_NONE,
    HOSTS,
    OTHER,
    PROMPT,
    TOOL_AFTER,
    TOOL_BEFORE,
    BadEvent,
    Host,
    HostEvent,
    detect,
)
from .undo import CommandDone, HostCommand, parse_command, perform

if TYPE_CHECKING:
    from undostore import EventAnswer, SnapshotResult, Workspace


class HookFailure(Exception):
    """A bad event: the message is the one stderr line."""


class Answer(NamedTuple):
    """What the hook ends with: stdout text, a stderr line, the exit code; `noted`: stdout
    carries the note for the model, which a duplicate of the event does not repeat (Codex
    adds every hook's context: the model would read it twice)."""

    stdout: str = ""
    stderr: str = ""
    code: int = 0
    noted: bool = False


def read_event(raw: bytes | str) -> dict[str, Any]:
    """The event object from stdin's bytes (or notify's argument); HookFailure saying what is
    wrong with it."""
    if isinstance(raw, bytes):
        try:
            raw = raw.decode("utf-8-sig")
        except UnicodeDecodeError as err:
            raise HookFailure(f"the hook event on stdin is not JSON: {err}") from None
    if not raw.strip():
        raise HookFailure("no hook event on stdin (expected one JSON object)")
    try:
        event = json.loads(raw)
    except ValueError as err:
        raise HookFailure(f"the hook event on stdin is not JSON: {err}") from None
    if not isinstance(event, dict):
        raise HookFailure(f"the hook event on stdin is not a JSON object "
                          f"(got {type(event).__name__})")
    return event


def _workspace(ctx: Options, event: HostEvent) -> Workspace:
    """The event's workspace through the one door (door.py): a restore a crash left half-done,
    a moved project and an untrusted store said on stderr (a `/undo` answer says the first
    too); nothing else, as the host shows stderr as trouble."""
    return open_workspace(ctx, lambda said: print(said.line, file=sys.stderr), cwd=event.cwd,
                          chatty=False)


def handle(ctx: Options, event: HostEvent, arrived: float) -> Answer:
    """Do what `event` asks, once (a duplicate of it, `arrived` when its hook started, gets the
    first's answer: `Workspace.once`, keyed as once.py says); the answer for the host."""
    quiet = Answer(event.host.quiet_answer(event.name))
    if event.kind == OTHER:
        return quiet
    command = parse_command(event.prompt) if event.kind == PROMPT else None
    if event.name == "input" and command is None:
        return quiet  # Pi's `input` event is asked only about commands
    with _workspace(ctx, event) as workspace:
        return workspace.once(event.host.name, event_key(event), arrived,
                              lambda: _performed(event, command, workspace, quiet), _replayed)


def _performed(event: HostEvent, command: HostCommand | None, workspace: Workspace,
               quiet: Answer) -> EventAnswer:
    """The event's answer, and the one its duplicates get: the same, less the note for the
    model (which the host would add twice)."""
    from undostore import EventAnswer

    answer = _act(event, command, workspace, quiet)
    return EventAnswer(answer, list(quiet if answer.noted else answer))


def _replayed(kept: object) -> Answer | None:
    """A duplicate's answer from what its first kept (None: unreadable, perform it)."""
    return Answer(*kept) if isinstance(kept, list) and len(kept) == len(Answer._fields) else None


def _act(event: HostEvent, command: HostCommand | None, workspace: Workspace,
         quiet: Answer) -> Answer:
    """`handle`'s work, the store lock held."""
    host, session = event.host, event.session or ""
    if command is not None:
        done = perform(workspace, event.session, command, event.cwd)
        if host.plugin:
            return _plugin_answer(workspace, session, done)
        return _blocked(host, done.line)
    if event.kind == PROMPT:
        with _first_snapshot_said(workspace):
            result = workspace.snapshot(session=session, label=event.label,
                                        meta={"event_id": event.event_id}
                                        if event.event_id else None)
        _say_left_out(result)
        return _with_notes(host, workspace, session, quiet)
    if event.kind == TOOL_BEFORE:
        workspace.call_started(event.call, session)
        return quiet
    if event.kind == TOOL_AFTER and event.call is not None:
        workspace.call_finished(event.call.call_id, session)
        return quiet
    workspace.end_turn(session, event_id=event.event_id if host.ends_by_id else None)
    if host.after_records_point:  # the next turn's undo point: notify has no other
        with _first_snapshot_said(workspace):
            result = workspace.snapshot(session=session,
                                        label=f"after: {event.label}" if event.label else None)
        _say_left_out(result)
    return quiet


def _with_notes(host: Host, workspace: Workspace, session: str, quiet: Answer) -> Answer:
    """The prompt's answer, carrying to the model what it must know since its last prompt
    (the turns an undo or redo took back or applied again: history/notes.py), where the host
    takes context from this hook; elsewhere the notes wait."""
    if host.context is None and not host.plugin:
        return quiet
    note = _note(workspace, session)
    if note is None:
        return quiet
    if host.plugin:
        return Answer(json.dumps({"context": note}), noted=True)
    if host.context_at_top:
        return Answer(json.dumps({"additionalContext": note}), noted=True)
    return Answer(json.dumps({"hookSpecificOutput": {"hookEventName": host.context,
                                                     "additionalContext": note}}), noted=True)


def _plugin_answer(workspace: Workspace, session: str, done: CommandDone) -> Answer:
    """A command's answer to undostore's own plugin: the line, the turns moved (the event id
    the plugin gave each, and its label) and the note for the model, taken here (Pi's
    extension sends it only where it cannot move the conversation; OpenCode's sends it in the
    command's place)."""
    turns = [{"event_id": p.meta.get("event_id"), "label": p.label} for p in done.turns]
    return Answer(json.dumps({"decision": "block", "reason": done.line, "turns": turns,
                              "note": _note(workspace, session)}))


def _note(workspace: Workspace, session: str) -> str | None:
    """The note for the session's model (history/notes.py), taken: one line; None: none."""
    lines = workspace.notes_for_model(session)
    return "undostore: " + " ".join(lines) if lines else None


# A first snapshot still running this long is said (a small tree's never is).
FIRST_SNAPSHOT_SAID_AFTER_S = 1.0


@contextmanager
def _first_snapshot_said(workspace: Workspace) -> Iterator[None]:
    """Around a snapshot: where it is the tree's first (it reads every file, and the prompt
    waits for it), one stderr line once it has run FIRST_SNAPSHOT_SAID_AFTER_S, saying so and
    how far the last try got (a try the host stopped keeps what it hashed:
    snapshot/resume.py), so that a host that gives up on the hook has it to show."""
    kept = workspace.first_snapshot_kept()
    if kept is None:
        yield
        return
    if kept.files:
        line = (f"taking this folder's first snapshot: resuming the last try, which kept "
                f"{kept.files:,} files ({kept.seconds:.0f} s of reading)")
    else:
        line = ("taking this folder's first snapshot: every file is read once (`undostore init` "
                "takes it ahead of the first prompt)")
    timer = threading.Timer(FIRST_SNAPSHOT_SAID_AFTER_S, print, (f"undostore: {line}",),
                            {"file": sys.stderr, "flush": True})
    timer.daemon = True
    timer.start()
    try:
        yield
    finally:
        timer.cancel()


def _say_left_out(result: SnapshotResult) -> None:
    """One stderr line naming what the undo point left out because it could not be read (no
    permission, a path too long): an undo cannot bring those back, so the user is told."""
    paths = result.left_out
    if paths:
        shown = ", ".join(paths[:3]) + (f" and {len(paths) - 3} more" if len(paths) > 3 else "")
        print(f"undostore: warning: left out of the undo point (cannot be read): {shown}",
              file=sys.stderr)


def _blocked(host: Host, line: str) -> Answer:
    """The answer that stops the `/undo` prompt from reaching the model, in the host's way."""
    if host.block == BLOCK_CONTINUE:
        return Answer(json.dumps({"continue": False, "user_message": line}))
    if host.block == BLOCK_EXIT_2:
        return Answer("", line, 2)
    if host.block == BLOCK_HANDLED:
        return Answer(json.dumps({"handled": True, "responseContent": line}))
    if host.block == BLOCK_NONE:
        return Answer("", line, 0)  # done; the host sends the prompt on regardless
    return Answer(json.dumps({"decision": "block", "reason": line}))


def _split_args(args: list[str]) -> tuple[str | None, str | None]:
    """(EVENT, JSON) from the positional arguments: an argument starting with `{` is the event
    JSON (Codex's notify), any other the event's name (Copilot names it on the command line)."""
    named = raw = None
    for arg in args:
        if arg.lstrip().startswith("{"):
            raw = arg
        elif arg.startswith("-"):
            raise HookFailure(f"hook takes --host H, an event name and the event JSON "
                              f"(got {arg})")
        elif named is None:
            named = arg
        else:
            raise HookFailure(f"hook takes one event name (got {named} and {arg})")
    return named, raw


def run(options: Options, host_name: str | None, args: list[str]) -> None:
    """Handle one hook event (`args`: an event name and/or the event JSON; else JSON on
    stdin) and exit with the host's answer: 0, or 1 with one stderr line."""
    arrived = time.time()   # before waiting for anything: a duplicate arrives with the first
    host: Host | None = HOSTS.get(host_name or "")
    name: str | None = None
    try:
        if host_name and host is None:
            raise HookFailure(f"unknown host {host_name!r} (hosts: {', '.join(HOSTS)})")
        named, raw = _split_args(args)
        if raw is None:
            if stdin_is_terminal():
                raise HookFailure("hook reads one hook event (JSON) on stdin, sent by an agent "
                                  "host")
            raw = sys.stdin.buffer.read()
        event = read_event(raw)
        host = host or detect(event)
        name = host.event_name(event, named)
        if name is None:
            key = host.event_key or "event name"
            raise HookFailure(f"the hook event has no {key}")
        try:
            record = host.parse(event, name)
        except BadEvent as err:
            raise HookFailure(str(err)) from None
        answer = handle(options, record, arrived)
    except BaseException as err:  # noqa: BLE001 (a hook must end with exit 0 or 1, whatever)
        if isinstance(err, SystemExit) and not err.code:
            answer = Answer(host.quiet_answer(name) if host else "")
        else:
            answer = Answer(host.quiet_answer(name) if host else "", _message(err), 1)
    _finish(answer)


def _message(err: BaseException) -> str:
    if isinstance(err, OSError) and err.strerror:
        where = f"{os.fsdecode(err.filename)}: " if err.filename else ""
        message = f"{where}{err.strerror}"
    elif isinstance(err, KeyboardInterrupt):   # Interrupted says what became of a restore
        message = getattr(err, "message", None) or "interrupted"
    else:
        message = str(err) or type(err).__name__
    return "undostore: error: hook: " + " ".join(message.split())


def _finish(answer: Answer) -> None:
    try:
        if answer.stdout:
            sys.stdout.write(answer.stdout + "\n")
            sys.stdout.flush()
        if answer.stderr:
            sys.stderr.write(answer.stderr + "\n")
            sys.stderr.flush()
    except (OSError, ValueError):
        pass  # the host closed the pipe: the exit code still says what happened
    sys.exit(answer.code)
