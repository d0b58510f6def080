"""The history rules as a plain model over file contents, for the model-based tests.

Files are `{path: content}` with one-line contents, so git's line merge of a path is a merge of
whole values: a path both sides changed, differently, conflicts. A turn is an undo point (the
files as it began) and the files after it; the rules are those of the contract's "History":

- the snapshot a point or a restore takes ends every session's open turn there (a provisional
  end the host's after-turn event replaces; its own session's turn for good);
- a turn found to have changed files ends its session's redo chain;
- undo takes back each turn's own change 3-way against the files now, redo applies it again,
  both refusing (nothing changed) where a later change overlaps;
- the newest turns that changed nothing are dropped by a step.

`History` mirrors history/sessions.py and history/steps.py; the tests hold the real program to
it through its CLI, hook and library.
"""

from __future__ import annotations

import copy
import itertools
from dataclasses import dataclass, field, replace

Files = dict[str, str]
_TURNS = itertools.count(1)


@dataclass
class Turn:
    before: Files
    label: str | None
    after: Files | None = None
    ended: bool = False
    # An undo or redo of some paths splits a turn between the two stacks: the paths of its
    # change this entry does not hold; `uid` tells the entries of one turn.
    left_out: frozenset[str] = frozenset()
    uid: int = field(default_factory=lambda: next(_TURNS))

    @property
    def changed(self) -> bool:
        return self.after != self.before

    def held(self) -> set[str]:
        """The paths of the turn's change this entry holds."""
        after = self.after if self.after is not None else self.before
        return {p for p in self.before.keys() | after.keys()
                if self.before.get(p) != after.get(p)} - self.left_out


def _without(start: Files, end: Files, leave: set[str] | frozenset[str]) -> Files:
    """`start` with the paths in `leave` as `end` has them: the change start -> end there is
    none."""
    out = {p: v for p, v in start.items() if p not in leave}
    out.update({p: end[p] for p in leave if p in end})
    return out


def _join(stack: list[Turn], entry: Turn) -> None:
    """As history/steps.py `_join`: into the entry of its turn that holds its other part, else
    on top."""
    for at in range(len(stack) - 1, -1, -1):
        if (stack[at].left_out or entry.left_out) and stack[at].uid == entry.uid:
            stack[at] = replace(stack[at], left_out=stack[at].left_out & entry.left_out)
            return
    stack.append(entry)


@dataclass
class Session:
    undo: list[Turn] = field(default_factory=list)    # oldest first
    redo: list[Turn] = field(default_factory=list)    # the next redo last


class Refused(Exception):
    """What the program refuses: `code` 2 (nothing to move) or 3 (a conflict)."""

    def __init__(self, code: int, paths: list[str] | None = None) -> None:
        super().__init__(code, paths)
        self.code = code
        self.paths = paths or []


def revert(start: Files, end: Files, ours: Files) -> tuple[Files, list[str]]:
    """Take back the change `start` -> `end` on `ours`, path by path (restore/revert.py)."""
    result = dict(ours)
    conflicts = []
    for path in sorted(start.keys() | end.keys()):
        base, theirs, mine = end.get(path), start.get(path), ours.get(path)
        if base == theirs or mine == theirs:
            continue
        if mine == base:
            if theirs is None:
                result.pop(path, None)
            else:
                result[path] = theirs
        else:
            conflicts.append(path)
    return result, conflicts


class History:
    """The files and every session's turns, changed only through the rules above."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.disk: Files = {}
        self.sessions: dict[str, Session] = {}
        self.let_go: list[Files] = []      # states that left a journal (restorable a day more)

    def session(self, name: str) -> Session:
        return self.sessions.setdefault(name, Session())

    # --- turn ends -----

    def _close(self, session: Session, after: Files, final: bool) -> None:
        if not session.undo or session.undo[-1].ended:
            return
        newest = session.undo[-1]
        if not final and newest.after is not None:
            return
        newest.after, newest.ended = dict(after), final
        if newest.changed and session.redo:
            self._drop(session.redo)
            session.redo.clear()

    def close_turns(self, files: Files, own: str | None) -> None:
        for name, session in self.sessions.items():
            self._close(session, files, final=name == own)

    def _drop(self, turns: list[Turn]) -> None:
        for turn in turns:
            self.let_go += [turn.before] + ([turn.after] if turn.after is not None else [])

    # --- what users and hosts do -----

    def point(self, name: str, label: str | None) -> bool:
        """A snapshot with a session (a prompt): whether a point was recorded."""
        self.close_turns(self.disk, name)
        session = self.session(name)
        if session.undo and session.undo[-1].before == self.disk:
            if not session.undo[-1].changed and label is not None:
                session.undo[-1] = Turn(dict(self.disk), label)
            return False
        session.undo.append(Turn(dict(self.disk), label))
        self._expire(session)
        return True

    def _expire(self, session: Session) -> None:
        gone = session.undo[:max(0, len(session.undo) - self.limit)]
        self._drop(gone)
        del session.undo[:len(gone)]

    def end_turn(self, name: str) -> None:
        """The host's after-turn event."""
        self._close(self.session(name), self.disk, final=True)

    def restored(self, name: str, label: str, target: Files) -> None:
        """A restore or revert with a session that changed the files to `target`."""
        safety = dict(self.disk)
        self.close_turns(safety, name)
        session = self.session(name)
        if session.undo and session.undo[-1].before == safety and not session.undo[-1].changed:
            session.undo[-1] = Turn(safety, label)
        else:
            session.undo.append(Turn(safety, label))
            self._expire(session)
        self._close(session, target, final=True)
        self.disk = dict(target)

    def step(self, name: str, undo: bool, count: int = 1, to: Files | None = None,
             whole: bool = False, merge: bool = False, paths: set[str] | None = None,
             turn: int | None = None) -> tuple[list[Turn], list[str]]:
        """An undo or redo: the turns moved (in the order applied) and the paths left with
        conflict markers (`merge`: their contents are not modelled; the caller reads them).
        `paths`: only those paths of the turns' change; the rest of each turn stays where it
        is; `turn` (undo): turn K alone, the newer turns kept. Refused: nothing changes."""
        if turn is not None:
            count = turn
        session = copy.deepcopy(self.session(name))
        probe = History(self.limit)
        probe.sessions = {name: session}
        probe._close(session, self.disk, final=True)
        top = 0
        while top < len(session.undo) and not session.undo[-1 - top].changed:
            top += 1
        left = session.undo[:len(session.undo) - top]
        if undo:
            turns = self._undo_turns(left, count, to)
        else:
            if not session.redo or count > len(session.redo):
                raise Refused(2)
            turns = list(reversed(session.redo[len(session.redo) - count:]))
        parts: list[tuple[set[str], set[str]] | None] = [None] * len(turns)
        if paths is not None or turn is not None:
            parts = [(t.held() & (paths if paths is not None else t.held()),
                      t.held() - (paths if paths is not None else t.held()))
                     if turn is None or at == len(turns) - 1 else (set(), set())
                     for at, t in enumerate(turns)]
            if not any(part[0] for part in parts if part is not None):
                raise Refused(2)
        files = dict(self.disk)
        conflicts: list[str] = []
        if whole:
            files = dict(turns[-1].before)
        else:
            for turn, part in zip(turns, parts, strict=True):
                if part is not None and not part[0]:
                    continue
                leave = turn.left_out | (part[1] if part is not None else set())
                after = turn.after if turn.after is not None else turn.before
                start, end = (turn.before, after) if undo else (after, turn.before)
                files, found = revert(_without(start, end, leave), end, files)
                conflicts += found
        if conflicts and not merge:
            raise Refused(3, sorted(set(conflicts)))
        # Done: what finish_step commits.
        self.close_turns(self.disk, name)
        real = self.session(name)
        del real.undo[len(real.undo) - top:]
        source, target = (real.undo, real.redo) if undo else (real.redo, real.undo)
        start = len(source) - len(turns)
        going, staying = [], []
        for entry, part in zip(source[start:], reversed(parts), strict=True):
            if part is None or (part[0] and not part[1]):
                going.append(entry)   # whole
                continue
            taken, rest = part
            if taken:
                going.append(replace(entry, left_out=entry.left_out | rest))
                staying.append(replace(entry, left_out=entry.left_out | taken))
            else:
                staying.append(entry)   # nothing taken: it stays as it is
        source[start:] = staying
        for entry in reversed(going):
            _join(target, entry)
        self.disk = files
        return turns, sorted(set(conflicts))

    @staticmethod
    def _undo_turns(left: list[Turn], count: int, to: Files | None) -> list[Turn]:
        changed = sum(t.changed for t in left)
        if not changed:
            raise Refused(2)
        if to is not None:
            at = [i for i, t in enumerate(left) if t.before == to]
            if not at:
                raise Refused(2)
            return list(reversed(left[at[-1]:]))
        if count > changed:
            raise Refused(2)
        turns = []
        for turn in reversed(left):
            if count == 0:
                break
            turns.append(turn)
            count -= turn.changed
        return turns

    def listed(self) -> list[Files]:
        """Every state a journal lists."""
        out = []
        for session in self.sessions.values():
            for turn in (*session.undo, *session.redo):
                out.append(turn.before)
                if turn.after is not None:
                    out.append(turn.after)
        return out
