"""Turns: what one undo point's turn changed, for `show`, `diff --turn`, `log --stat` and `pick`.

A turn runs from its undo point (the files as the turn began) to the files after it: what the
host recorded at its after-turn event (`Point.after`) where it sent one, else the session's
next undo point, else (the newest turn, still open) the files now. Turns are counted from the
newest: 1 is the last turn. Pure over a journal; the workspace takes the snapshot of the files
now and diffs the two trees.
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
    number: int             # 1 = the last turn
    point: Point
    end: str | None
    end_kind: str           # END_AFTER, END_NEXT or END_NOW


def spans(journal: Journal, limit: int | None = None) -> list[TurnSpan]:
    """The session's turns, newest first (at most `limit`)."""
    count = len(journal.undo) if limit is None else min(limit, len(journal.undo))
    return [_span(journal, n) for n in range(1, count + 1)]


def find(journal: Journal, number: int | None = None, point_id: str | None = None) -> TurnSpan:
    """Turn `number` (1 = the last; the default), or the newest turn whose point is `point_id`
    (a full id). UsageError when the session has no such turn."""
    if not journal.undo:
        raise UsageError(f"session {journal.name!r} has no undo points, so no turns to show")
    if point_id is not None:
        ids = [p.id for p in journal.undo]
        if point_id not in ids:
            raise UsageError(f"{point_id[:12]} is not an undo point of session "
                             f"{journal.name!r} (see `undostore log`)")
        return _span(journal, ids[::-1].index(point_id) + 1)
    number = 1 if number is None else number
    if not 1 <= number <= len(journal.undo):
        raise UsageError(f"no turn {number} in session {journal.name!r}: it has "
                         f"{len(journal.undo)} (1 is the last)")
    return _span(journal, number)


def _span(journal: Journal, number: int) -> TurnSpan:
    at = len(journal.undo) - number
    point = journal.undo[at]
    if point.after is not None:
        return TurnSpan(journal.name, number, point, point.after, END_AFTER)
    if number > 1:
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
                "changes": [change.to_dict() for change in self.changes]}
