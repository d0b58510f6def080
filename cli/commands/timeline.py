"""`log --all` (and `--graph`): every conversation's turns in one timeline, newest first, each
with its tool calls and its files, so the user picks what to take back knowing what else ran
beside it (as `jj log` shows operations). `--graph` draws a lane per conversation, from its
newest turn down to its oldest."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from ..results import changes_json
from ..textout import call_lines, part_note

if TYPE_CHECKING:
    from undostore import Workspace
    from undostore.history.turns import Turn

FILES_SHOWN = 8   # a turn's files listed under it; the rest counted


def timeline_json(workspace: Workspace, turns: list[Turn]) -> dict[str, Any]:
    """`log --all --json`: each turn as `show --json` gives it, newest first."""
    out = []
    for turn in turns:
        doc = turn.to_json()
        doc["changes"] = changes_json(workspace.store, turn.changes)
        out.append(doc)
    return {"all": True, "turns": out}


def timeline_text(turns: list[Turn], graph: bool, stat: Any = None) -> str:
    """The timeline for people: a line per turn (its session, number, id, time, label), its
    calls, then its files (`stat(changes)`: git's diffstat instead)."""
    lanes = _lanes(turns) if graph else None
    lines: list[str] = []
    for at, turn in enumerate(turns):
        head, rest = lanes(at) if lanes is not None else ("", "")
        point = turn.point
        number = turn.span.number if turn.span.number is not None else "-"
        when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(point.time))
        label = f"  {point.label}" if point.label else ""
        part = f"  {part_note(point)}" if point.partial else ""
        lines.append(f"{head}{turn.span.session}  {number:>3}  {point.id[:12]}  {when}"
                     f"{label}{part}")
        body = call_lines(point)
        if stat is not None:
            body += stat(turn.changes).rstrip("\n").splitlines()
        else:
            body += [f"    {c.status[:1]}  {c.path}" for c in turn.changes[:FILES_SHOWN]]
            if len(turn.changes) > FILES_SHOWN:
                body.append(f"    ... and {len(turn.changes) - FILES_SHOWN} more files")
        lines += [f"{rest}{line}" for line in body]
    return "\n".join(lines)


def _lanes(turns: list[Turn]) -> Any:
    """For row `at`: (the row's lane prefix, its continuation lines' prefix). A session's lane
    runs from its newest turn's row to its oldest's; lanes in the order their sessions first
    appear."""
    first: dict[str, int] = {}
    last: dict[str, int] = {}
    for at, turn in enumerate(turns):
        first.setdefault(turn.span.session, at)
        last[turn.span.session] = at
    order = list(first)

    def prefixes(at: int) -> tuple[str, str]:
        own = turns[at].span.session
        row = "".join("o " if lane == own else "| " if first[lane] < at <= last[lane] else "  "
                      for lane in order)
        below = "".join("| " if first[lane] <= at < last[lane] else "  " for lane in order)
        return row, below

    return prefixes
