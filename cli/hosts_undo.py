"""`/undo`, `/undo N`, `/redo`, `/redo N` typed in an agent host: the user's command, not a turn.

The hook performs it in the event's session (no question: the user asked), records no point, and
answers with one line saying what came back, or why nothing did. A plugin command arrives with its
namespace (`/undostore:undo`, Claude Code's plugin form), so that is accepted too.
"""

from __future__ import annotations

import re
from typing import Any, NamedTuple

_COMMAND = re.compile(r"\s*/(?:undostore:)?(undo|redo)(?:\s+(\d{1,4}))?\s*", re.IGNORECASE)


class HostCommand(NamedTuple):
    step: str    # "undo" or "redo"
    count: int   # how many steps (1 for a bare `/undo`)


def parse_command(prompt: object) -> HostCommand | None:
    """The command a prompt is, or None for an ordinary prompt."""
    if not isinstance(prompt, str):
        return None
    match = _COMMAND.fullmatch(prompt)
    if match is None:
        return None
    count = int(match.group(2)) if match.group(2) else 1
    return HostCommand(match.group(1).lower(), max(count, 1))


def steps(workspace: Any, step: str, session: str, count: int) -> list[Any]:
    """`count` undos or redos of `session` in one restore (one safety snapshot); the result
    in a list."""
    confirm = lambda plan: True  # noqa: E731 (the user typed the command: that is the yes)
    do = workspace.undo if step == "undo" else workspace.redo
    return [do(session, steps=count, confirm=confirm)]


def perform(workspace: Any, session: str | None, command: HostCommand) -> str:
    """Do `command` in `session`; the one line for the host to show."""
    from undostore.errors import UndostoreError

    name = workspace.history_session(session or None)[0]
    try:
        results = steps(workspace, command.step, name, command.count)
    except UndostoreError as err:
        return f"undostore: {command.step}: {' '.join(str(err).split())}"
    labels = [p.label or p.id[:12] for r in results for p in r.turns]
    return _summary(command, name, labels, results)


def _summary(command: HostCommand, session: str, labels: list[str], results: list[Any]) -> str:
    touched = {path for r in results for path in (*r.created, *r.modified, *r.deleted)}
    count = sum(len(r.turns) for r in results)
    turns = f"{count} turns" if count > 1 else "the last turn"
    what = "; ".join(repr(label) for label in labels[:3]) + ("; ..." if len(labels) > 3 else "")
    verb = "undid" if command.step == "undo" else "redid"
    back = "/redo takes it back" if command.step == "undo" else "/undo takes it back"
    warnings = [w for r in results for w in r.warnings]
    kept = (f"; {len(warnings)} warning(s), the first: {warnings[0].path!r}: "
            f"{' '.join(warnings[0].message.split())}" if warnings else "")  # one line
    return (f"undostore: {verb} {turns} of session {session!r} ({what}): {len(touched)} "
            f"file(s) changed, safety snapshot {results[0].safety[:12]}; {back}{kept}")
