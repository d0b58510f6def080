"""What a restore journal keeps for the history step the restore does, so that the step is
finished once the files are there, even by recovery after a crash (sessions.finish_step): the
session, the step (`undo`, `redo`, or `restore`/`revert`, which record the files before them as
an undo point), and its token, by which it is applied once. An undo or redo also keeps the
files before it and the turns it drops and moves; a restore or revert its undo point's label.
Kept in the journal as JSON, read back into this record (anything else is no step)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:
    from undostore.history.journal import Cut
# (the paths it takes, the paths of the entry it leaves behind, the paths it takes hunks of,
# the turn's cut after it)
Part = tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...], "Cut | None"]


class StepContext(NamedTuple):
    session: str
    step: str
    token: str
    now: str | None = None          # undo, redo: the files before the step
    dropped: tuple[str, ...] = ()   # undo, redo: the newest turns that changed nothing
    moved: tuple[str, ...] = ()     # undo, redo: the turns it moves, in stack order (top last)
    label: str | None = None        # restore, revert: the label of the point it records
    # undo, redo of some paths or hunks: for each moved turn (as `moved`), None where it moves
    # whole, else a Part
    parts: tuple[Part | None, ...] = ()

    def to_json(self) -> dict[str, Any]:
        doc = self._asdict()
        doc.update(dropped=list(self.dropped), moved=list(self.moved),
                   parts=[None if part is None else
                          [list(part[0]), list(part[1]), list(part[2]),
                           part[3].to_json() if part[3] is not None else None]
                          for part in self.parts])
        return doc

    @classmethod
    def of_json(cls, doc: object) -> StepContext | None:
        """The step a journal's context names; None: none, or not one undostore wrote."""
        if not isinstance(doc, dict):
            return None
        session, step, token = doc.get("session"), doc.get("step"), doc.get("token")
        now, label = doc.get("now"), doc.get("label")
        dropped, moved = doc.get("dropped", []), doc.get("moved", [])
        parts = doc.get("parts", [])
        if not (isinstance(session, str) and isinstance(step, str) and isinstance(token, str)
                and _ids(dropped) and _ids(moved) and isinstance(parts, list)):
            return None
        read = [_part(part) for part in parts]
        if any(part is False for part in read):
            return None
        return cls(session, step, token, now if isinstance(now, str) else None,
                   tuple(dropped), tuple(moved), label if isinstance(label, str) else None,
                   tuple(part for part in read if part is not False))


def _part(doc: object) -> Part | None | bool:
    """A part of a context's JSON (a context written before hunks has two lists); False: not
    one undostore wrote."""
    if doc is None:
        return None
    if not (isinstance(doc, list) and len(doc) in (2, 4) and all(_ids(x) for x in doc[:3])):
        return False
    if len(doc) == 2:
        return tuple(doc[0]), tuple(doc[1]), (), None
    cut = None
    if doc[3] is not None:
        from undostore.history.journal import Cut

        try:
            cut = Cut.from_json(doc[3])
        except ValueError:
            return False
    return tuple(doc[0]), tuple(doc[1]), tuple(doc[2]), cut


def _ids(value: object) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) for v in value)
