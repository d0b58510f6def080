"""verify: every object that the journals (or one snapshot) need is present and hash-correct.

Unlike gc, verify reads every blob: each is inflated in chunks and its git id recomputed, so a
large file costs no more memory than a small one. Two passes with the store's one tree walker:
the first checks each distinct object once, across all snapshots; the second, only when
something is wrong, walks each snapshot again into the trees that hold a problem, so a damaged
blob shared by 50 snapshots costs one check and is still reported under each with its path there.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from undostore.errors import IncompleteSnapshotError
from undostore.git.objects import MODE_GITLINK, MODE_TREE, Entry
from undostore.git.reader import ObjectReader
from undostore.git.treewalk import walk
from undostore.history import journal as journals

if TYPE_CHECKING:
    from undostore.store.store import Store

MISSING = "missing"
CORRUPT = "corrupt"


@dataclass(frozen=True)
class Problem:
    """An object a snapshot needs that is absent or damaged; `path` is where the snapshot holds
    it ("" for the snapshot's root tree)."""

    snapshot: str
    path: str
    id: str
    reason: str

    def to_json(self) -> dict[str, str]:
        return {"snapshot": self.snapshot, "path": self.path, "id": self.id,
                "reason": self.reason}


@dataclass
class VerifyResult:
    ok: bool
    missing: list[Problem] = field(default_factory=list)
    corrupt: list[Problem] = field(default_factory=list)
    checked: int = 0           # distinct objects read and hashed
    snapshots: list[str] = field(default_factory=list)
    repaired: list[str] = field(default_factory=list)    # with repair: one line per action
    damaged_sessions: list[str] = field(default_factory=list)

    @property
    def lost_snapshots(self) -> list[str]:
        """Snapshots that cannot be restored whole (after a repair: what is lost)."""
        return sorted({p.snapshot for p in (*self.missing, *self.corrupt)})

    def to_json(self) -> dict[str, Any]:
        return {"ok": self.ok, "missing": [p.to_json() for p in self.missing],
                "corrupt": [p.to_json() for p in self.corrupt], "checked": self.checked,
                "snapshots": self.snapshots, "repaired": self.repaired,
                "lost_snapshots": self.lost_snapshots,
                "damaged_sessions": self.damaged_sessions}


def verify(store: Store, snapshot_id: str | None = None, *, repair: bool = False,
           snapshot: Callable[[], object] | None = None) -> VerifyResult:
    """Check `snapshot_id`, or every snapshot any journal lists. With `repair`: heal packs
    first (re-index, salvage, move aside), move packs holding a damaged object aside, write
    what the files still hold (`snapshot`, a callable taking a snapshot with the lock held),
    accept the salvage of damaged journals, and check again: what is left is what is lost."""
    # gc must not delete packs under our feet; a check alone writes nothing (a read-only store)
    with store.lock if repair else store.reading():
        repaired = store.heal(full=True) if repair else []
        if snapshot_id is not None:
            snapshots = [store.resolve(snapshot_id).hex()]
        else:
            listed: set[str] = set()
            for name in journals.session_names(store):
                listed |= journals.load(store, name).ids()
            snapshots = sorted(listed)
        result = _check(store, snapshots)
        if repair and not result.ok:
            repaired += _set_aside_damaged(store)
            if snapshot is not None:
                taken = snapshot()
                repaired.append(f"snapshot {getattr(taken, 'id', '')} of the files: "
                                f"{getattr(taken, 'new_objects', 0)} objects written again")
            result = _check(store, snapshots)
        if repair:
            for name in journals.damaged_sessions(store):
                journals.forget_damaged(store, name)
                repaired.append(f"session {name!r}: salvaged journal kept")
        result.repaired = repaired
        result.damaged_sessions = journals.damage_notes(store)
    return result


def _check(store: Store, snapshots: list[str]) -> VerifyResult:
    with ObjectReader(store) as reader:
        checker = _Checker(reader)
        roots = [bytes.fromhex(s) for s in snapshots]
        for root in roots:
            checker.check(root)
        result = VerifyResult(ok=True, snapshots=snapshots, checked=checker.checked)
        if checker.bad:
            checker.find_dirty()
            for snapshot, root in zip(snapshots, roots, strict=True):
                for path, sha, (kind, reason) in checker.problems(root):
                    problem = Problem(snapshot, path, sha.hex(), reason)
                    (result.missing if kind == MISSING else result.corrupt).append(problem)
    result.ok = not result.missing and not result.corrupt
    return result


def _set_aside_damaged(store: Store) -> list[str]:
    """Packs holding a copy found damaged: salvage the rest of each and move it aside."""
    names = {pack for _, pack in store.damaged_copies()}
    for base, pack in list(store.index.packs.items()):
        if pack.name in names:
            store.index.set_aside(base, "it holds a damaged object")
    return store.heal()


class _Checker:
    def __init__(self, reader: ObjectReader) -> None:
        self.reader = reader
        self.bad: dict[bytes, tuple[str, str]] = {}     # id -> (kind, reason)
        self.trees: dict[bytes, list[bytes]] = {}       # tree -> the ids it lists
        self.blobs: set[bytes] = set()
        self.dirty: set[bytes] = set()                  # trees with a problem at or below
        self.checked = 0

    def _read(self, sha: bytes) -> list[Entry]:
        self.checked += 1
        try:
            entries = self.reader.read_tree(sha)
        except IncompleteSnapshotError as err:
            self.bad[sha] = _problem(err)
            entries = []
        self.trees[sha] = [child for mode, _, child in entries if mode != MODE_GITLINK]
        return entries

    def check(self, root: bytes) -> None:
        """Pass one: read each distinct tree and blob below `root` once."""
        if root in self.trees:
            return
        for _path, mode, sha in walk(self._read, root, enter=lambda s: s not in self.trees):
            if mode in (MODE_TREE, MODE_GITLINK) or sha in self.blobs:
                continue
            self.blobs.add(sha)
            self.checked += 1
            try:
                self.reader.verify_blob(sha)
            except IncompleteSnapshotError as err:
                self.bad[sha] = _problem(err)

    def find_dirty(self) -> None:
        """Every tree with a bad object at or below it (post-order over the trees read)."""
        state: dict[bytes, bool] = {}
        for top in self.trees:
            stack = [(top, False)]
            while stack:
                sha, done = stack.pop()
                if sha in state:
                    continue
                children = self.trees.get(sha, [])
                if not done:
                    stack.append((sha, True))
                    stack.extend((c, False) for c in children if c in self.trees)
                    continue
                state[sha] = sha in self.bad or any(
                    c in self.bad or state.get(c, False) for c in children)
        self.dirty = {sha for sha, dirty in state.items() if dirty}

    def problems(self, root: bytes) -> list[tuple[str, bytes, tuple[str, str]]]:
        """Pass two: (path, id, (kind, reason)) of each bad object below `root`."""
        if root in self.bad:
            return [("", root, self.bad[root])]
        if root not in self.dirty:
            return []
        return [(path, sha, self.bad[sha]) for path, _mode, sha in
                walk(self.reader.read_tree, root,
                     enter=lambda s: s in self.dirty and s not in self.bad)
                if sha in self.bad]


def _problem(err: IncompleteSnapshotError) -> tuple[str, str]:
    if err.missing:
        return MISSING, "not in the store"
    return CORRUPT, err.message
