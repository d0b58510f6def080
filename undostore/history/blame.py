"""Who changed a path since a turn: the recorded turns of any session that changed it later.

A conflict names the later change it met (`steps.TurnConflict.by`): another session's turn, a
turn of the same session, or none (the user, or a program no host reported). Read only when a
step conflicts: each later turn is compared on that one path (`diff_trees` with a path).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from undostore.history import journal as journals
from undostore.history.journal import Point

if TYPE_CHECKING:
    from undostore.history.steps import TurnConflict
    from undostore.store.store import Store


def changed_by(store: Store, path: str, turn: Point) -> str | None:
    """The newest recorded turn after `turn` that changed `path`, named for people; None if no
    recorded turn did."""
    from undostore.diff.trees import diff_trees

    later: list[tuple[float, str, Point]] = []
    for name in journals.session_names(store):
        journal = journals.load(store, name)
        later += [(p.time, name, p) for p in journal.undo
                  if p.time > turn.time and p.after and p.changed]
    for _when, session, point in sorted(later, key=lambda t: t[0], reverse=True):
        assert point.after is not None
        if diff_trees(store, bytes.fromhex(point.id), bytes.fromhex(point.after), paths=[path]):
            label = repr(point.label) if point.label else point.id[:12]
            return f"session {session!r}, turn {label}"
    return None


def name_changes(store: Store, conflicts: list[TurnConflict], now: str | None = None
                 ) -> list[TurnConflict]:
    """`conflicts`, each with who changed its path since: the markers an earlier `--merge`
    left in it (in snapshot `now`, the files now), else a recorded turn where one did."""
    marked = _holding_markers(store, now, [c.path for c in conflicts]) if now else set()
    return [c._replace(by="an earlier --merge: it holds the conflict markers that left"
                       if c.path in marked else changed_by(store, c.path, c.turn))
            for c in conflicts]


def _holding_markers(store: Store, now: str, paths: list[str]) -> set[str]:
    from undostore.diff.merge import has_markers
    from undostore.git.objects import MODE_LINK
    from undostore.git.reader import ObjectReader
    from undostore.restore.plan import entries_at

    with ObjectReader(store) as reader:
        found = entries_at(reader.read_tree_body, bytes.fromhex(now), paths)
        return {path for path, entry in found.items()
                if entry is not None and entry[0] != MODE_LINK
                and has_markers(reader.read_blob(entry[1]))}
