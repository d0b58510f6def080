"""Undo and redo as one request: which turns move, the tree that takes them back or applies them
again, and what the journal becomes.

A turn is an undo point and the files after it (`journal.Point`). `undo N` takes back the change
of each of the session's last N turns that changed files, newest first, 3-way against the files
now (restore/revert.py's rules: what `git revert` of each turn gives), so every other change since
stays: the user's, another session's. `redo N` applies the undone turns' changes again, the next
first, the same way. Either is one restore to the tree those merges give, and the turns move
between the undo and redo stacks unchanged (their before and after ids are the turn's), so undos
and redos in any order end on the files the same turns give. `whole` (undo only) restores the
whole folder to the oldest undone point instead.

`plan` makes the one request from one journal read; `compose` the tree; sessions.py runs the
restore and, through `apply` once the files are there (also after a crash), moves the turns.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any, NamedTuple

from undostore.errors import ConflictError, UsageError
from undostore.history.direction import Direction
from undostore.history.journal import Cut, Journal, Point
from undostore.history.stepcontext import StepContext
from undostore.restore.restore import RestoreResult

if TYPE_CHECKING:
    from undostore.diff.content import Blobs
    from undostore.diff.pickfile import FileChange, FilePick, Picked
    from undostore.restore.plan import Differences, Entry
    from undostore.store.store import Store


class TurnPart(NamedTuple):
    """What an undo or redo of some paths (`undo -- PATH`) or hunks (`undo -p`) takes of one
    turn's entry: `taken`, the paths of its change it moves to the other stack, `rest`, those
    it leaves where they are, and `hunked`, those it moves part of: `cut` (the turn's cut
    after the step, journal.Cut) says where their change is cut now. Nothing taken: the entry
    stays whole; nothing left: it moves whole."""

    taken: frozenset[str]
    rest: frozenset[str]
    hunked: frozenset[str] = frozenset()
    cut: Cut | None = None

    @property
    def whole(self) -> bool:
        """Whether the entry moves whole (it took all its entry holds)."""
        return bool(self.taken) and not self.rest and not self.hunked

    @property
    def moves(self) -> bool:
        """Whether the step takes anything of the entry."""
        return bool(self.taken or self.hunked)


class HeldFile(NamedTuple):
    """One file's change that an undo or redo would take of a turn (`undo -p` asks about its
    hunks): the turn, which pair of trees of its change (history/attribution.py: a turn whose
    calls changed the file apart has one change of it per stretch) out of how many, and the
    change as the turn's entry holds it (its start and end, its hunks)."""

    turn: Point
    pair: int
    pairs: int
    change: FileChange

    @property
    def path(self) -> str:
        return self.change.path

    def pick(self, blobs: Blobs, picked: Picked, direction: Direction) -> FilePick:
        """What the step takes of this change for the answers `picked`."""
        return self.change.pick(blobs, picked, back=direction is Direction.UNDO,
                                turn=self.turn.id, pair=self.pair)


class StepRequest(NamedTuple):
    """One undo or redo, decided once from one journal read: the turns it moves in the order it
    applies them (undo: newest first; redo: the next first), the newest turns that changed
    nothing (dropped by either), the files before it, and how. `parts`: for a step of some
    paths, what it takes of each turn (as `turns`); empty: each turn whole."""

    session: str
    direction: Direction
    turns: list[Point]
    dropped: list[Point]      # the newest turns that changed nothing, newest first
    now: str
    whole: bool = False
    parts: tuple[TurnPart, ...] = ()

    def context(self, token: str) -> StepContext:
        """The restore journal's context: what `apply` needs, even after a crash. Ids in stack
        order (the top last)."""
        return StepContext(self.session, self.direction.value, token, self.now,
                           tuple(p.id for p in reversed(self.dropped)),
                           tuple(p.id for p in reversed(self.turns)),
                           parts=tuple(None if part.whole else
                                       (tuple(sorted(part.taken)), tuple(sorted(part.rest)),
                                        tuple(sorted(part.hunked)), part.cut)
                                       for part in reversed(self.parts)))

    def moving(self) -> list[tuple[Point, TurnPart | None]]:
        """The turns the step takes something of, in its order, each with what it takes (None:
        the turn whole)."""
        if not self.parts:
            return [(turn, None) for turn in self.turns]
        return [(turn, None if part.whole else part)
                for turn, part in zip(self.turns, self.parts, strict=True) if part.moves]

    def leaves(self, at: int) -> frozenset[str]:
        """The paths of turn `at`'s change this step leaves as they are: what its entry does
        not hold, and what a step of some paths does not take."""
        turn = self.turns[at]
        return turn.left_out | (self.parts[at].rest if self.parts else frozenset())


class TurnConflict(NamedTuple):
    """A path where a turn's change overlaps a later one, and who made the later one, when a
    recorded turn did (None: not a recorded turn: the user, or a program)."""

    path: str
    turn: Point
    by: str | None = None


class GitMoved(NamedTuple):
    """The user's git HEAD named `was` as the first turn an undo took back began and names
    `now`: a commit the agent made then stays (undostore never writes `.git`); `git reset WAS`
    moves the branch back and keeps the files as the undo left them."""

    was: str
    now: str

    def advice(self) -> str:
        return (f"your git HEAD moved since that turn began ({self.was[:12]} -> "
                f"{self.now[:12]}): undostore leaves .git alone; if the agent committed, "
                f"`git reset {self.was[:12]}` moves the branch back and keeps the files as they "
                "are now")

    def to_json(self) -> dict[str, str]:
        return {"was": self.was, "now": self.now}


@dataclass
class StepResult(RestoreResult):
    """A restore done as an undo or redo: the turns it took back or applied again in the order
    it did, the paths left with conflict markers (`merge`), and the notice of a crashed
    restore finished first (None: there was none)."""

    step: str = Direction.UNDO.value
    turns: list[Point] = field(default_factory=list)
    conflicts: list[str] = field(default_factory=list)
    unmarked: dict[str, str] = field(default_factory=dict)   # conflicts with no markers: why
    whole: bool = False
    recovered: str | None = None
    git_moved: GitMoved | None = None   # an undo: the user's git HEAD moved since (Workspace)

    # a step of some paths: the paths it took of each turn (as `turns`); None: the turn whole
    parts: list[list[str] | None] = field(default_factory=list)

    @classmethod
    def of(cls, result: RestoreResult, request: StepRequest, composed: Composed,
           recovered: str | None) -> StepResult:
        values = {f.name: getattr(result, f.name) for f in fields(RestoreResult)}
        moving = request.moving()
        return cls(**values, step=request.direction.value, turns=[turn for turn, _ in moving],
                   conflicts=sorted({c.path for c in composed.conflicts}),
                   unmarked=composed.unmarked, whole=request.whole, recovered=recovered,
                   parts=[None if part is None else sorted(part.taken | part.hunked)
                          for _, part in moving])

    def taken_paths(self) -> list[str]:
        """The paths a step of some paths took of its turns, sorted (none: it took each turn
        whole), as every front end names them."""
        return sorted({path for part in self.parts if part is not None for path in part})

    def counts(self) -> str:
        """`1 turn; 3 files`: what the step moved, in the words every front end uses."""
        files = len(self.created) + len(self.modified) + len(self.deleted)
        return f"{_plural(len(self.turns), 'turn')}; {_plural(files, 'file')}"

    def to_json(self) -> dict[str, Any]:
        doc = super().to_json()
        doc.update(step=self.step, turns=[p.to_json() for p in self.turns],
                   conflicts=self.conflicts, unmarked=self.unmarked, whole=self.whole,
                   recovered=self.recovered,
                   git_moved=self.git_moved.to_json() if self.git_moved else None,
                   parts=self.parts or [None] * len(self.turns))
        return doc


class StepConflict(ConflictError):
    """The turns to take back (or apply again) overlap later changes: nothing was changed.
    `conflicts` names each path and who changed it since, where known."""

    def __init__(self, request: StepRequest, conflicts: list[TurnConflict]) -> None:
        self.conflicts = sorted({c.path for c in conflicts})   # what `--json` lists
        verb = request.direction.value
        lines = [f"{c.path} ({_turn_name(c.turn)}; changed since by "
                 f"{c.by or 'you or a program: no recorded turn changed it'})"
                 for c in conflicts]
        ways = (f"`undostore {verb} --merge` writes them with conflict markers"
                + (f", `undostore undo --whole` puts the whole folder back to "
                   f"{request.turns[-1].id[:12]} (a safety snapshot keeps the files now)"
                   if request.direction is Direction.UNDO else ""))
        shown = "\n  ".join(lines)
        super().__init__(
            f"{verb} of session {request.session!r} conflicts with later changes in "
            f"{len(conflicts)} path(s); nothing was changed ({ways}):\n  {shown}",
            None)


class DoubtfulChange(ConflictError):
    """The turns to take back (or apply again) changed files while another conversation's
    call ran too (its shell; or its file tool naming them, where they also changed beside it),
    so whose change each was is in doubt: nothing was changed. `conflicts` names them."""

    def __init__(self, request: StepRequest, doubt: dict[str, tuple[str, ...]]) -> None:
        self.conflicts = sorted(doubt)
        verb = request.direction.value
        lines = [f"{path} (changed while a call of {', '.join(map(repr, others))} ran too)"
                 for path, others in sorted(doubt.items())]
        shown = "\n  ".join(lines)
        super().__init__(
            f"{verb} of session {request.session!r}: {len(doubt)} path(s) changed while another "
            f"conversation's call ran too, so whose change they were is in doubt; nothing "
            f"was changed (`undostore {verb} --keep-doubtful` {verb}s the rest and leaves them "
            f"as they are; `/{verb} --keep` in a host):\n  {shown}", None)


def doubt_of(request: StepRequest) -> dict[str, tuple[str, ...]]:
    """The paths in doubt in the request's turns that it would take back or apply again,
    each with the other sessions (history/attribution.py)."""
    found: dict[str, set[str]] = {}
    for at, turn in enumerate(request.turns):
        if request.parts and not request.parts[at].moves:
            continue   # it stays as it is
        leaves = request.leaves(at)
        for path, others in turn.doubt:
            if path not in leaves:
                found.setdefault(path, set()).update(others)
    return {path: tuple(sorted(others)) for path, others in found.items()}


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else "s")


def _turn_name(point: Point) -> str:
    return f"turn {point.label!r}" if point.label else f"turn {point.id[:12]}"


# --- deciding ------------------------------------------------------------------------------------


def plan(journal: Journal, direction: Direction, now: str, *, steps: int = 1,
         to: str | None = None, whole: bool = False) -> StepRequest:
    """The request for `steps` turns (undo: or every turn back to and including the one of
    point `to`, a full id) of `journal`, whose newest turn is closed. UsageError when there is
    nothing to move or not that many turns."""
    if steps < 1:
        raise UsageError(f"{direction.value} takes a number of steps of 1 or more")
    dropped = _unchanged_on_top(journal)
    if direction is Direction.UNDO:
        turns = _undo_turns(journal, journal.undo[:len(journal.undo) - len(dropped)], steps, to)
    else:
        turns = _redo_turns(journal, steps)
    return StepRequest(journal.name, direction, turns, dropped, now, whole)


def narrow(store: Store, request: StepRequest, wanted: Callable[[str], bool] | None,
           asked: list[str], *, oldest_only: bool = False) -> StepRequest:
    """`request` taking only the paths `wanted` selects (None: every path) of each turn's
    change (the pathspecs `asked`, for the message); with `oldest_only`, of its oldest turn
    alone (`undo --turn K`: the newer turns stay as they are). A turn it takes nothing of stays
    where it is. UsageError when it would take nothing."""
    parts = []
    oldest = len(request.turns) - 1
    for at, turn in enumerate(request.turns):
        if oldest_only and at != oldest:
            parts.append(TurnPart(frozenset(), frozenset()))
            continue
        held = held_paths(store, turn)
        taken = frozenset(path for path in held if wanted is None or wanted(path))
        parts.append(TurnPart(taken, held - taken, cut=_without_cut(turn.cut, taken)))
    if not any(part.moves for part in parts):
        which = ("the turn" if len(request.turns) == 1 or oldest_only
                 else f"the {len(request.turns)} turns")
        raise UsageError(f"{request.direction.value}: {which} of session {request.session!r} "
                         f"changed none of {', '.join(asked)} (`undostore show` lists what a "
                         "turn changed)")
    return request._replace(parts=tuple(parts))


def call_paths(store: Store, turn: Point, number: int) -> frozenset[str]:
    """The paths of the turn's call `number` (1 = its first call that changed files, as `show`
    numbers them) that its entry holds: what the call changed from its start to its end that
    is the turn's own (`undo --call N`). UsageError for no such call, a call recorded before
    calls kept their files, one whose change is already on the redo stack, or a path another
    call of the turn changed too (their change is one there: `--turn K -- PATH` takes back
    both)."""
    from undostore.history.attribution import tree_changes

    name = f"turn {turn.label!r}" if turn.label else f"turn {turn.id[:12]}"
    if not 1 <= number <= len(turn.notes):
        raise UsageError(f"{name} has {len(turn.notes)} call(s) that changed files, no call "
                         f"{number} (`undostore show` numbers them)")
    held = held_paths(store, turn)

    def paths_of(note: Any) -> frozenset[str]:
        if note.before is None or note.after is None:
            raise UsageError(f"the calls of {name} were recorded before undostore kept each "
                             f"call's files: `undostore undo -- PATH` takes back some paths")
        return frozenset(tree_changes(store, note.before, note.after)) & held

    mine = paths_of(turn.notes[number - 1])
    if not mine:
        raise UsageError(f"call {number} of {name} has nothing left to take back (its change "
                         "is undone already)")
    shared = sorted({path for at, note in enumerate(turn.notes, 1) if at != number
                     for path in paths_of(note) & mine})
    if shared:
        raise UsageError(f"call {number} of {name} changed {', '.join(shared[:5])}, which "
                         f"another call of the turn changed too, so its change there is not "
                         f"its alone: `undostore undo --turn K -- {shared[0]}` takes back the "
                         "turn's whole change of it")
    return mine


def held_paths(store: Store, turn: Point) -> frozenset[str]:
    """The paths of the turn's change that this entry holds (all it changed, less what a step
    of some paths took to the other stack)."""
    from undostore.history.attribution import tree_changes

    found: set[str] = set()
    for before, after in _pairs(turn):
        found.update(tree_changes(store, before, after))
    return frozenset(found - turn.left_out)


def _pairs(turn: Point) -> tuple[tuple[str, str], ...]:
    """The (before, after) pairs of trees whose changes are the turn's: its calls' segments
    (history/attribution.py), else its point to its end."""
    return turn.own if turn.own is not None else ((turn.id, turn.after or turn.id),)


def _unchanged_on_top(journal: Journal) -> list[Point]:
    """The newest turns that changed no file (a prompt that did nothing, a point recorded as
    the user typed `/undo`): a step drops them, newest first."""
    top = 0
    while top < len(journal.undo) and not journal.undo[-1 - top].changed:
        top += 1
    return list(reversed(journal.undo[len(journal.undo) - top:]))


def _undo_turns(journal: Journal, left: list[Point], steps: int, to: str | None
                ) -> list[Point]:
    changed = sum(p.changed for p in left)
    if not changed:
        raise UsageError(f"nothing to undo in session {journal.name!r}"
                         + (": its turns changed no file" if journal.undo else ""))
    if to is not None:
        ids = [p.id for p in left]
        if to not in ids:
            raise UsageError(f"cannot undo session {journal.name!r} to {to[:12]}: it is not "
                             "one of its undo points with a turn to take back (see "
                             "`undostore log`)")
        at = len(ids) - 1 - ids[::-1].index(to)
        return list(reversed(left[at:]))
    if steps > changed:
        raise UsageError(f"cannot undo {steps} turns in session {journal.name!r}: it has "
                         f"{changed} turn{'s' if changed != 1 else ''} that changed files")
    turns: list[Point] = []
    for point in reversed(left):
        if steps == 0:
            break
        turns.append(point)
        steps -= point.changed
    return turns


def _redo_turns(journal: Journal, steps: int) -> list[Point]:
    redo = journal.redo
    if not redo:
        raise UsageError(f"nothing to redo in session {journal.name!r}")
    if steps > len(redo):
        raise UsageError(f"cannot redo {steps} turns in session {journal.name!r}: it has "
                         f"{len(redo)} undone turn{'s' if len(redo) != 1 else ''}")
    return list(reversed(redo[len(redo) - steps:]))


# --- the tree ------------------------------------------------------------------------------------


class Composed(NamedTuple):
    """The tree the step restores to, and the paths where a turn overlapped a later change
    (with markers in the tree where they are text: what `merge` writes)."""

    target: str
    conflicts: list[TurnConflict]
    unmarked: dict[str, str]   # conflicts left with no markers, and what stands there
    still_marked: list[str]    # conflicts in files an earlier --merge left marked


def compose(store: Store, request: StepRequest, bodies: dict[bytes, bytes] | None = None,
            leave: frozenset[str] = frozenset(),
            differences: Differences | None = None) -> Composed:
    """Each turn's change taken back (undo) or applied again (redo) on the files now, one turn
    after another in the request's order; `whole`: the oldest undone point itself. `bodies`
    gathers the tree bodies read and made, `differences` the trees flattened (plan.py), for
    the restore that follows."""
    from undostore.restore.revert import build_revert_tree

    if request.whole:
        return Composed(request.turns[-1].id, [], {}, [])
    ours = request.now
    conflicts: list[TurnConflict] = []
    unmarked: dict[str, str] = {}
    still_marked: list[str] = []
    for at, turn in enumerate(request.turns):
        if request.parts and not request.parts[at].moves:
            continue   # a step of some paths takes none of this turn's
        for start, end in _reverts(store, turn, request.direction, leave | request.leaves(at),
                                   request.parts[at] if request.parts else None):
            tree = build_revert_tree(store, bytes.fromhex(start), bytes.fromhex(end),
                                     bytes.fromhex(ours),
                                     theirs_label=f"{request.direction.value} of "
                                                  f"{_turn_name(turn)}", bodies=bodies,
                                     differences=differences)
            conflicts += [TurnConflict(path, turn) for path in tree.conflicts]
            unmarked.update(tree.unmarked)
            still_marked += tree.still_marked
            ours = tree.target
    return Composed(ours, conflicts, unmarked, still_marked)


def _reverts(store: Store, turn: Point, direction: Direction, leave: frozenset[str],
             part: TurnPart | None = None) -> list[tuple[str, str]]:
    """The (FROM, TO) pairs whose change `revert` takes back, in order, to undo the turn (or
    redo it): its own change's segments, newest first (history/attribution.py), else the turn
    from its point to its end; none of them changing the paths in `leave`. A file cut between
    the turn's entries (`turn.cut`) changes up to the cut (undo) or from it (redo); one whose
    hunks the step picks (`part.hunked`), from its new cut (undo) or to it (redo)."""
    from undostore.history.attribution import entries_from, without

    pairs = list(_pairs(turn))
    if leave:
        pairs = [without(store, pair, leave) for pair in pairs]
    undo = direction is Direction.UNDO
    old = sorted(turn.cut.paths - leave) if turn.cut else []
    new = sorted(part.hunked) if part is not None and part.cut is not None else []
    for at, (before, after) in enumerate(pairs):
        if old:
            assert turn.cut is not None
            if undo:
                after = entries_from(store, after, turn.cut.trees[at], old)
            else:
                before = entries_from(store, before, turn.cut.trees[at], old)
        if new:
            assert part is not None and part.cut is not None
            if undo:
                before = entries_from(store, before, part.cut.trees[at], new)
            else:
                after = entries_from(store, after, part.cut.trees[at], new)
        pairs[at] = (before, after)
    if undo:
        return list(reversed(pairs))
    return [(after, before) for before, after in pairs]


def _without_cut(cut: Cut | None, paths: frozenset[str]) -> Cut | None:
    """The turn's cut once `paths` moved whole to one stack (None: nothing is cut any more)."""
    if cut is None or not cut.paths & paths:
        return cut
    left = cut.paths - paths
    return cut._replace(paths=left) if left else None


# --- hunks ---------------------------------------------------------------------------------------


def held_files(store: Store, request: StepRequest) -> list[HeldFile]:
    """Each file's change the request would take of each of its turns, per pair of trees of
    the turn's change, in the request's order: what `undo -p` asks about, hunk by hunk."""
    from undostore.diff.pickfile import FileChange, Side
    from undostore.restore.plan import TreeBodies

    trees = TreeBodies(store.index.read_tree_body, {})
    out: list[HeldFile] = []
    for turn, part in request.moving():
        paths = sorted(part.taken if part is not None else held_paths(store, turn))
        pairs = _pairs(turn)
        for at, (before, after) in enumerate(pairs):
            ranges = _ranges(trees, turn, request.direction, at, before, after, paths)
            out += [HeldFile(turn, at, len(pairs),
                             FileChange.read(store, path, Side.of(start), Side.of(end)))
                    for path, (start, end) in ranges.items() if start != end]
    return out


def _ranges(trees: Any, turn: Point, direction: Direction, at: int, before: str, after: str,
            paths: list[str]) -> dict[str, tuple[Entry | None, Entry | None]]:
    """Each path's change in pair `at` as the turn's entry on `direction`'s stack holds it:
    (start, end) entries, cut where the turn's change of it is cut."""
    from undostore.restore.treebuild import entries_at

    starts = entries_at(trees, bytes.fromhex(before), paths)
    ends = entries_at(trees, bytes.fromhex(after), paths)
    cut = turn.cut
    if cut is not None and (cut_paths := [p for p in paths if p in cut.paths]):
        at_cut = entries_at(trees, bytes.fromhex(cut.trees[at]), cut_paths)
        (ends if direction is Direction.UNDO else starts).update(at_cut)
    return {path: (starts[path], ends[path]) for path in paths}


def narrow_hunks(store: Store, request: StepRequest, picks: list[FilePick]) -> StepRequest:
    """`request` taking of each turn only what `picks` took of its files (`undo -p`): a file
    whose every hunk was picked moves whole, one with some picked is cut there (the turn's
    two entries each hold part of it), one with none stays. UsageError when a pick's turn or
    file is not as the request holds it now (the session moved on since the person looked),
    or when nothing was picked."""
    from undostore.restore.plan import TreeBodies

    trees = TreeBodies(store.index.read_tree_body, {})
    parts = []
    for at, turn in enumerate(request.turns):
        held = held_paths(store, turn)
        mine = [pick for pick in picks if pick.turn == turn.id]
        if not mine:
            parts.append(TurnPart(frozenset(), held, cut=turn.cut))
            continue
        offered = request.parts[at].taken if request.parts else held
        parts.append(_picked_part(store, trees, request.direction, turn, held, offered, mine))
    if not any(part.moves for part in parts):
        raise UsageError(f"{request.direction.value} -p: no hunk was picked")
    return request._replace(parts=tuple(parts))


def _picked_part(store: Store, trees: Any, direction: Direction, turn: Point,
                 held: frozenset[str], offered: frozenset[str], picks: list[FilePick]
                 ) -> TurnPart:
    """What `picks` (all of `turn`'s) take of it (`held`: the paths its entry holds; `offered`:
    those the step may take): each picked file's new cut per pair of
    trees, classed as taken whole (the cut at the start of what the entry holds: its end, for
    a redo), left (the cut where it was) or cut (anywhere else: the new cut trees made)."""
    from undostore.restore.treebuild import with_entries
    from undostore.store.recent import remember

    undo = direction is Direction.UNDO
    wanted = sorted({pick.path for pick in picks})
    stray = [path for path in wanted if path not in offered]
    if stray:
        raise UsageError(f"{direction.value} -p: {', '.join(stray[:5])} is not a file this "
                         f"{direction.value} takes of {_turn_name(turn)}: pick again")
    pairs = _pairs(turn)
    ranges = [_ranges(trees, turn, direction, at, before, after, wanted)
              for at, (before, after) in enumerate(pairs)]
    blobs: dict[bytes, bytes] = {}
    taken, hunked = set(), set()
    new_entries: list[dict[str, Entry | None]] = [{} for _ in pairs]
    for path in wanted:
        spans = [held[path] for held in ranges]
        at_cut = [_cut_of(picks, at, path, start, end, undo, blobs, turn, direction)
                  for at, (start, end) in enumerate(spans)]
        if at_cut == [start if undo else end for start, end in spans]:
            taken.add(path)
        elif at_cut != [end if undo else start for start, end in spans]:
            hunked.add(path)
            for at, entry in enumerate(at_cut):
                new_entries[at][path] = entry
    cut = _without_cut(turn.cut, frozenset(taken))
    if hunked:
        bases = cut.trees if cut else tuple(after for _, after in pairs)
        made = tuple(with_entries(store, base, entries, blobs=blobs, trees=trees)
                     for base, entries in zip(bases, new_entries, strict=True))
        remember(store.path, *(bytes.fromhex(sha) for sha in made))   # gc's grace till listed
        cut = Cut((cut.paths if cut else frozenset()) | hunked, made)
    return TurnPart(frozenset(taken), held - taken - hunked, frozenset(hunked), cut)


def _cut_of(picks: list[FilePick], at: int, path: str, start: Entry | None, end: Entry | None,
            undo: bool, blobs: dict[bytes, bytes], turn: Point, direction: Direction
            ) -> Entry | None:
    """Where the pick of `path` in pair `at` puts its cut (no pick: where the entry's part of
    it ends, for an undo; starts, for a redo); its content goes to `blobs`."""
    from undostore.diff.pickfile import Side

    found = [pick for pick in picks if pick.pair == at and pick.path == path]
    if not found:
        return end if undo else start
    if len(found) > 1:
        raise UsageError(f"{path} is picked twice in one change")
    pick = found[0]
    if (pick.start, pick.end) != (Side.of(start), Side.of(end)):
        raise UsageError(f"{direction.value} -p: {path} of {_turn_name(turn)} is not as it "
                         "was when its hunks were picked (the session moved on): pick again")
    return pick.entry(blobs)


# --- the journal ---------------------------------------------------------------------------------


def matches(journal: Journal, context: StepContext) -> bool:
    """Whether the journal is still as the step found it (its context): the dropped turns on
    top of the undo stack, the moved ones below them (undo) or on top of the redo stack.
    False when the session changed since."""
    dropped, moved = list(context.dropped), list(context.moved)
    if not moved or (context.parts and len(context.parts) != len(moved)):
        return False
    undo = [p.id for p in journal.undo]
    if context.step == Direction.UNDO.value:
        return undo[max(0, len(undo) - len(moved) - len(dropped)):] == [*moved, *dropped]
    redo = [p.id for p in journal.redo]
    return (undo[len(undo) - len(dropped):] == dropped
            and redo[max(0, len(redo) - len(moved)):] == moved)


def apply(journal: Journal, context: StepContext) -> None:
    """Move the turns of a step that `matches` the journal, once the dropped ones are gone:
    undo puts them on the redo stack (the oldest undone one on top: the next redo), redo back
    on the undo stack. A step of some paths (`context.parts`) splits a turn it takes part of:
    the entry that stays leaves those paths out, the one that moves holds only them; an entry
    joins the other part of its turn where that is on the stack it goes to (one entry again
    once no path is left out), else goes on top."""
    dropped, count = len(context.dropped), len(context.moved)
    del journal.undo[len(journal.undo) - dropped:]
    undo = context.step == Direction.UNDO.value
    source, target = (journal.undo, journal.redo) if undo else (journal.redo, journal.undo)
    start = len(source) - count
    parts = context.parts or (None,) * count
    going: list[Point] = []
    staying: list[Point] = []
    cuts: list[tuple[Point, Cut | None]] = []
    for entry, part in zip(source[start:], parts, strict=True):
        if part is None:
            going.append(entry)
            cuts.append((entry, entry.cut))
            continue
        taken, rest, hunked, cut = (frozenset(part[0]), frozenset(part[1]),
                                    frozenset(part[2]), part[3])
        cuts.append((entry, cut))
        if taken or hunked:
            going.append(entry._replace(left_out=(entry.left_out | rest) - hunked))
        staying.append(entry._replace(left_out=entry.left_out | taken)
                       if taken or hunked else entry)
    source[start:] = staying
    for entry in reversed(going):
        _join(target, entry)
    for entry, cut in cuts:
        _set_cut(journal, entry, cut)


def _set_cut(journal: Journal, turn: Point, cut: Cut | None) -> None:
    """Give the entries of `turn`'s turn on both stacks its cut after a step: none where the
    turn is on one stack only (the cut is between its two entries)."""
    places = [(stack, at) for stack in (journal.undo, journal.redo)
              for at, entry in enumerate(stack) if entry.same_turn(turn)]
    if len({id(stack) for stack, _ in places}) < 2:
        cut = None
    for stack, at in places:
        stack[at] = stack[at]._replace(cut=cut)


def _join(stack: list[Point], entry: Point) -> None:
    """Put `entry` on `stack`: into the entry of its turn that holds its other part, where
    there is one (the newest), else on top."""
    for at in range(len(stack) - 1, -1, -1):
        if (stack[at].left_out or entry.left_out) and stack[at].same_turn(entry):
            stack[at] = stack[at]._replace(left_out=stack[at].left_out & entry.left_out)
            return
    stack.append(entry)
