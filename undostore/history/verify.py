"""verify: every object that the journals (or one snapshot) need is present and hash-correct.

Unlike gc, verify reads every blob: each object is inflated in chunks straight from its pack
record and its git id recomputed, so a large file costs no more memory than a small one. Each
distinct object is checked once; the problems found below a tree are remembered relative to that
tree, so a damaged blob shared by 50 snapshots costs one check and is still reported under each
snapshot with its path there.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from undostore.errors import IncompleteSnapshotError
from undostore.git.objects import BLOB, MODE_TREE, TREE, decode_tree
from undostore.git.packfile import DeltaRecord, PackSet
from undostore.history import journal as journals

if TYPE_CHECKING:
    from undostore.store.store import Store

_GITLINK = 0o160000
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

    def to_json(self) -> dict[str, Any]:
        return {"ok": self.ok, "missing": [p.to_json() for p in self.missing],
                "corrupt": [p.to_json() for p in self.corrupt], "checked": self.checked,
                "snapshots": self.snapshots}


# A problem relative to a tree: (path below the tree, object id hex, kind, reason).
_Relative = tuple[str, str, str, str]


def verify(store: Store, snapshot_id: str | None = None) -> VerifyResult:
    """Check `snapshot_id`, or every snapshot any journal lists."""
    with store.lock:   # gc must not delete packs under our feet
        if snapshot_id is not None:
            snapshots = [store.resolve(snapshot_id).hex()]
        else:
            listed: set[str] = set()
            for name in journals.session_names(store):
                listed |= journals.load(store, name).ids()
            snapshots = sorted(listed)
        checker = _Checker(store)
        try:
            result = VerifyResult(ok=True, snapshots=snapshots)
            for snapshot in snapshots:
                for path, sha, kind, reason in checker.tree(bytes.fromhex(snapshot)):
                    problem = Problem(snapshot, path, sha, reason)
                    (result.missing if kind == MISSING else result.corrupt).append(problem)
            result.checked = checker.checked
        finally:
            checker.close()
    result.ok = not result.missing and not result.corrupt
    return result


class _Checker:
    def __init__(self, store: Store) -> None:
        self.store = store
        self.packs = PackSet(store.pack_dir)
        self.trees: dict[bytes, list[_Relative]] = {}
        self.blobs: dict[bytes, tuple[str, str] | None] = {}
        self.checked = 0

    def close(self) -> None:
        self.packs.close()

    def tree(self, root: bytes) -> list[_Relative]:
        """Problems below tree `root`, iteratively (folders may nest deeper than Python's
        recursion limit)."""
        pending: dict[bytes, list[tuple[int, bytes, bytes]]] = {}
        stack: list[tuple[bytes, bool]] = [(root, False)]
        while stack:
            sha, expanded = stack.pop()
            if sha in self.trees:
                continue
            if not expanded:
                entries, problem = self._read_tree(sha)
                if problem is not None:
                    self.trees[sha] = [("", sha.hex(), *problem)]
                    continue
                pending[sha] = entries
                stack.append((sha, True))
                stack.extend((child, False) for mode, _, child in entries
                             if mode == MODE_TREE and child not in self.trees)
                continue
            problems: list[_Relative] = []
            for mode, name, child in pending.pop(sha):
                path = os.fsdecode(name)
                if mode == MODE_TREE:
                    problems.extend((_join(path, rel), i, k, r) for rel, i, k, r in
                                    self.trees[child])
                elif mode != _GITLINK:
                    found = self._blob(child)
                    if found is not None:
                        problems.append((path, child.hex(), *found))
            self.trees[sha] = problems
        return self.trees[root]

    def _read_tree(self, sha: bytes) -> tuple[list[tuple[int, bytes, bytes]],
                                              tuple[str, str] | None]:
        self.checked += 1
        found = self.packs.where.get(sha)
        if found is None:
            return [], (MISSING, "not in the store")
        pack, record = found
        try:
            type_num, body = pack.body(record)
        except DeltaRecord:
            try:
                type_num, body = self.store.read(sha)
            except IncompleteSnapshotError as err:
                return [], (CORRUPT, err.message)
        except (OSError, ValueError) as err:
            return [], (CORRUPT, str(err))
        if type_num != TREE:
            return [], (CORRUPT, "not a tree")
        try:
            return decode_tree(body), None
        except (ValueError, IndexError) as err:
            return [], (CORRUPT, f"unreadable tree: {err}")

    def _blob(self, sha: bytes) -> tuple[str, str] | None:
        if sha in self.blobs:
            return self.blobs[sha]
        self.checked += 1
        self.blobs[sha] = outcome = self._check_blob(sha)
        return outcome

    def _check_blob(self, sha: bytes) -> tuple[str, str] | None:
        found = self.packs.where.get(sha)
        if found is None:
            return MISSING, "not in the store"
        pack, record = found
        try:
            type_num, got = pack.object_hash(record)
        except DeltaRecord:
            try:
                type_num, _ = self.store.read(sha)
            except IncompleteSnapshotError as err:
                return CORRUPT, err.message
            got = sha
        except (OSError, ValueError) as err:
            return CORRUPT, str(err)
        if type_num != BLOB:
            return CORRUPT, "not a blob"
        if got != sha:
            return CORRUPT, "hash mismatch"
        return None


def _join(path: str, rel: str) -> str:
    return f"{path}/{rel}" if rel else path
