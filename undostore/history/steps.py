"""Undo and redo of several turns at once: which points move, and what the redo stack gets.

`undo N` (or `undo --to ID`) is one restore to the point N turns back. Its redo entries are the
ones N single undos would have left: the newest undone point's entry is the files before the
undo (the restore's safety snapshot), and each older one's is the state the next point began
with. So `redo` then steps forward one turn at a time, through each undone turn's state, and
the last redo lands on the files from before the undo. `redo N` is the mirror: one restore to
the N-th redo entry, the redone points coming back with the ids N single redos would give.

Pure functions over a journal; sessions.py runs the restore and commits the journal.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, fields
from typing import Any, NamedTuple

from undostore.errors import UsageError
from undostore.history.journal import Journal, Point
from undostore.restore.restore import RestoreResult


class Move(NamedTuple):
    """The entries a step moves, oldest first, and the id the step restores."""

    step: str                 # "undo" or "redo"
    skipped: list[str]        # undo only: the newest points equal to the files now, dropped
    moved: list[Point]        # undo: points, oldest first; redo: entries, next redo last
    target: str

    def context(self, session: str, token: str) -> dict[str, Any]:
        """The restore journal's context: what `apply` needs, even after a crash."""
        return {"session": session, "step": self.step, "token": token, "skipped": self.skipped,
                "count": len(self.moved), "moved": [p.id for p in self.moved]}


@dataclass
class StepResult(RestoreResult):
    """A restore done as an undo or redo, with the turns it took back or brought back in the
    order it did (undo: the undo points, newest first; redo: the redo entries, next first,
    whose labels are the turns'): the last one names the turn the files are now before (undo)
    or after (redo)."""

    step: str = "undo"
    turns: list[Point] = field(default_factory=list)

    @classmethod
    def of(cls, result: RestoreResult, step: str, turns: list[Point]) -> StepResult:
        values = {f.name: getattr(result, f.name) for f in fields(RestoreResult)}
        return cls(**values, step=step, turns=turns)

    def to_json(self) -> dict[str, Any]:
        doc = super().to_json()
        doc.update(step=self.step, turns=[p.to_json() for p in self.turns])
        return doc


def plan_undo(journal: Journal, now: str, steps: int = 1, to: str | None = None) -> Move:
    """Undo `steps` points (or back to the newest point with id `to`, a full id), after leaving
    out the newest points equal to the files `now` (undoing to them would change nothing).
    UsageError when there are not that many points or `to` is not one of them."""
    undo = journal.undo
    skip = 0
    while skip < len(undo) and undo[-1 - skip].id == now:
        skip += 1
    left = undo[:len(undo) - skip]
    if to is not None and to == now:
        raise UsageError(f"cannot undo session {journal.name!r} to {to[:12]}: the files "
                         "already equal it")
    if not left:
        raise UsageError(f"nothing to undo in session {journal.name!r}"
                         + (": the files already equal its undo points" if undo else ""))
    if to is not None:
        ids = [p.id for p in left]
        if to not in ids:
            raise UsageError(f"cannot undo session {journal.name!r} to {to[:12]}: it is not "
                             "one of its undo points (see `undostore log`)")
        steps = len(ids) - (len(ids) - 1 - ids[::-1].index(to))
    if steps < 1:
        raise UsageError("undo takes a number of steps of 1 or more")
    if steps > len(left):
        raise UsageError(f"cannot undo {steps} turns in session {journal.name!r}: it has "
                         f"{_points(len(left))} to go back to")
    moved = left[len(left) - steps:]
    return Move("undo", [p.id for p in undo[len(undo) - skip:]], moved, moved[0].id)


def plan_redo(journal: Journal, steps: int = 1) -> Move:
    """Redo `steps` entries of the redo stack; UsageError when there are not that many."""
    redo = journal.redo
    if not redo:
        raise UsageError(f"nothing to redo in session {journal.name!r}")
    if steps < 1:
        raise UsageError("redo takes a number of steps of 1 or more")
    if steps > len(redo):
        raise UsageError(f"cannot redo {steps} turns in session {journal.name!r}: it has "
                         f"{len(redo)} redo {'entry' if len(redo) == 1 else 'entries'}")
    moved = redo[len(redo) - steps:]
    return Move("redo", [], moved, moved[0].id)


def matches(journal: Journal, context: dict[str, Any]) -> bool:
    """Whether the journal is still as the step found it (its context): the skipped points,
    then the moved ones, on top of the stack. False when the session changed since."""
    step, skipped, moved = context.get("step"), context.get("skipped"), context.get("moved")
    if not isinstance(moved, list) or not moved or not isinstance(skipped, list):
        return False
    stack = journal.undo if step == "undo" else journal.redo
    top = [p.id for p in stack[max(0, len(stack) - len(moved) - len(skipped)):]]
    return top == [*moved, *skipped]


def apply(journal: Journal, context: dict[str, Any], safety: str) -> None:
    """Move the entries of a step that `matches` the journal; `safety` is its restore's safety
    snapshot (the files before the step)."""
    skipped, count = len(context["skipped"]), len(context["moved"])
    if context["step"] == "undo":
        del journal.undo[len(journal.undo) - skipped:]
        moved = journal.undo[len(journal.undo) - count:]
        del journal.undo[len(journal.undo) - count:]
        now = time.time()
        # Newest first: the newest undone point's redo entry is the files before the undo;
        # each older one's is the state the point after it began with.
        after = safety
        for point in reversed(moved):
            journal.push_redo(point, after, now)
            after = point.id
    else:
        entries = journal.redo[len(journal.redo) - count:]
        del journal.redo[len(journal.redo) - count:]
        # Next redo first: it comes back with the id of the files before the redo; each later
        # one with the state the entry before it stood for.
        before = safety
        for entry in reversed(entries):
            journal.push_back(entry, before)
            before = entry.id


def _points(n: int) -> str:
    return f"{n} undo point" + ("" if n == 1 else "s")
