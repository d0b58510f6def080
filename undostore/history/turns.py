"""Turns: what one undo point's turn changed, for `show`, `diff --turn`, `log --stat` and `pick`.

A turn runs from its undo point (the files as the turn began) to the files after it: what the
host recorded at its after-turn event (`Point.after`) where it sent one, else the session's
next undo point, else (the newest turn, still open) the files now. Turns are counted from the
newest as `undo N` counts them: 1 is the last turn that changed files (`numbers`). Pure over a
journal; the workspace looks at the files now and diffs the two trees.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple

from undostore.errors import UsageError
from undostore.history.journal import Journal, Point

if TYPE_CHECKING:
    from undostore.diff.change import Change

END_AFTER, END_NEXT, END_NOW = "after", "next", "now"


class TurnSpan(NamedTuple):
    """Where one turn starts and ends. `end` None: the files now (`end_kind` "now")."""

    session: str
    number: int | None      # 1 = the last turn that changed files; None: it changed none
    point: Point
    end: str | None
    end_kind: str           # END_AFTER, END_NEXT or END_NOW


def numbers(journal: Journal, open_changed: bool | None = None) -> list[int | None]:
    """Each undo point's turn number, newest first: the turns that changed files counted from
    1, the turns that changed none None, as `undo N` counts them (history/steps.py). The
    newest turn while open counts as changed unless `open_changed` (the files now compared
    with its point, by a command that looks at them) says it changed nothing: `status` and
    `log` do not look, `show`, `diff --turn`, `log --stat` and `undo` do. One numbering,
    decided here."""
    out: list[int | None] = []
    count = 0
    for point in reversed(journal.undo):
        changed = point.changed
        if point is journal.undo[-1] and point.after is None and open_changed is not None:
            changed = open_changed
        if changed:
            count += 1
        out.append(count if changed else None)
    return out


def spans(journal: Journal, limit: int | None = None, open_changed: bool | None = None
          ) -> list[TurnSpan]:
    """The session's turns, newest first (at most `limit`), numbered by `numbers`."""
    count = len(journal.undo) if limit is None else min(limit, len(journal.undo))
    numbered = numbers(journal, open_changed)
    return [_span(journal, at, numbered[at]) for at in range(count)]


def find(journal: Journal, number: int | None = None, point_id: str | None = None,
         open_changed: bool | None = None) -> TurnSpan:
    """Turn `number` (1 = the last that changed files; the default), or the newest turn whose
    point is `point_id` (a full id; also a turn that changed nothing). UsageError when the
    session has no such turn."""
    if not journal.undo:
        raise UsageError(f"session {journal.name!r} has no undo points, so no turns to show")
    numbered = numbers(journal, open_changed)
    if point_id is not None:
        ids = [p.id for p in reversed(journal.undo)]
        if point_id not in ids:
            raise UsageError(f"{point_id[:12]} is not an undo point of session "
                             f"{journal.name!r} (see `undostore log`)")
        at = ids.index(point_id)
        return _span(journal, at, numbered[at])
    number = 1 if number is None else number
    if number not in numbered or number < 1:
        counted = max((n for n in numbered if n is not None), default=0)
        raise UsageError(f"no turn {number} in session {journal.name!r}: it has {counted} "
                         f"turn{'s' if counted != 1 else ''} that changed files (1 is the last)")
    at = numbered.index(number)
    return _span(journal, at, number)


def _span(journal: Journal, newest_first: int, number: int | None) -> TurnSpan:
    at = len(journal.undo) - 1 - newest_first
    point = journal.undo[at]
    if point.after is not None:
        return TurnSpan(journal.name, number, point, point.after, END_AFTER)
    if at + 1 < len(journal.undo):
        return TurnSpan(journal.name, number, point, journal.undo[at + 1].id, END_NEXT)
    return TurnSpan(journal.name, number, point, None, END_NOW)


@dataclass
class Turn:
    """One turn and what it changed (`changes`: from `from_id`, its point, to `to_id`)."""

    span: TurnSpan
    to_id: str
    changes: list[Change]

    @property
    def point(self) -> Point:
        return self.span.point

    @property
    def from_id(self) -> str:
        return self.span.point.id

    def to_json(self) -> dict[str, Any]:
        return {"session": self.span.session, "number": self.span.number,
                "point": self.point.to_json(), "from": self.from_id,
                # the files now are looked at, not recorded: no id is handed out for them
                "to": self.to_id if self.span.end is not None else None,
                "to_kind": self.span.end_kind,
                "changes": [change.to_dict() for change in self.changes],
                # where the host reports its calls: those that made the changes (else null)
                "calls": ([note.to_json() for note in self.point.notes]
                          if self.point.by_calls else None)}
