"""What holds the store's bytes: which snapshots reach which objects, read from the trees only.

Two walks, each reading a tree body at most twice and never inflating a blob; sizes are the
objects' packed record lengths:

- `held_alone(store, groups)`: the bytes each group of roots (a session, the ids handed out
  outside sessions, the files now) reaches and no other group does. `sessions --json` reports
  it as `bytes`; gc uses it to say what it kept.
- `newest_reach(store, roots)`: for every object in the store, the newest time of a root that
  reaches it (-inf: nothing does). Dropping every root older than t frees exactly the objects
  whose time is below t: how far retention must go to fit a size.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from undostore.errors import UndostoreError
from undostore.git.objects import MODE_TREE
from undostore.git.reader import ObjectReader
from undostore.history import journal as journals
from undostore.history.reflog import handed_out
from undostore.restore.restorelog import pending_snapshot_ids
from undostore.store.statcache import StatCache

if TYPE_CHECKING:
    from undostore.store.store import Store

_GITLINK = 0o160000
# Groups besides the sessions: names no session can have (session names hold no control
# characters), with words for people.
RECENT, FILES_NOW, PENDING, SHARED = "\x01recent", "\x01files", "\x01pending", "\x01shared"
GROUP_KEYS = {RECENT: "outside_sessions", FILES_NOW: "files_now", PENDING: "pending_restore",
              SHARED: "shared"}


@dataclass
class Roots:
    """Tree ids (walked) and blob ids (taken as they are) of one group."""

    trees: set[bytes] = field(default_factory=set)
    blobs: set[bytes] = field(default_factory=set)


class _Objects:
    """Sizes and tree children, from the store's packs (git.reader: hash-checked)."""

    def __init__(self, store: Store) -> None:
        self.reader = ObjectReader(store)
        self.sizes: dict[bytes, int] = {}
        for pack in self.reader.packs.values():
            for record in pack.records():
                self.sizes.setdefault(record.sha, record.length)

    def close(self) -> None:
        self.reader.close()

    def size(self, sha: bytes) -> int:
        return self.sizes.get(sha, 0)

    def children(self, sha: bytes) -> list[tuple[bytes, bool]]:
        """(id, is a tree) of a tree's entries; [] for a missing or damaged tree (verify's
        to report) or a blob."""
        if sha not in self.sizes:
            return []
        try:
            entries = self.reader.read_tree(sha)
        except UndostoreError:
            return []
        return [(child, mode == MODE_TREE) for mode, _, child in entries if mode != _GITLINK]


def held_alone(store: Store, groups: Mapping[str, Roots]) -> dict[str, int]:
    """Bytes reached by each group and by no other; objects several groups reach count under
    SHARED."""
    owner: dict[bytes, str] = {}
    objects = _Objects(store)
    try:
        for name, roots in groups.items():
            stack = [(sha, True, name) for sha in roots.trees]
            stack += [(sha, False, name) for sha in roots.blobs]
            while stack:
                sha, is_tree, group = stack.pop()
                current = owner.get(sha)
                if current in (group, SHARED):
                    continue
                # Reached by a second group: shared, and so is everything below it.
                group = owner[sha] = group if current is None else SHARED
                if is_tree:
                    stack.extend((child, sub, group) for child, sub in objects.children(sha))
        alone = dict.fromkeys((*groups, SHARED), 0)
        for sha, group in owner.items():
            alone[group] += objects.size(sha)
        return alone
    finally:
        objects.close()


def newest_reach(store: Store, roots: Mapping[bytes, float], blobs: Iterable[bytes] = ()
                 ) -> list[tuple[float, int]]:
    """(newest time of a root reaching it, packed size) of every object in the store; `blobs`
    are reached at +inf (kept whatever happens), unreached objects get -inf."""
    reached: dict[bytes, float] = dict.fromkeys(blobs, math.inf)
    objects = _Objects(store)
    try:
        for root, when in sorted(roots.items(), key=lambda item: -item[1]):
            stack = [(root, True)]
            while stack:   # newest roots first: the first visit is the newest time
                sha, is_tree = stack.pop()
                if sha in reached:
                    continue
                reached[sha] = when
                if is_tree:
                    stack.extend(objects.children(sha))
        return [(reached.get(record.sha, -math.inf), record.length)
                for pack in objects.reader.packs.values() for record in pack.records()]
    finally:
        objects.close()


def standing_roots(store: Store, since: float) -> dict[str, Roots]:
    """The roots no retention drops: ids handed out outside sessions since `since`, the files
    now (the stat cache), a pending restore's snapshots; by group."""
    held = StatCache.load(store.stat_cache_path, store.identity).held_ids()
    now = Roots(held.trees, held.blobs)
    listed_by = {name: roots.trees for name, roots in session_roots(store).items()}
    return {RECENT: Roots(handed_out(store, since, listed_by)), FILES_NOW: now,
            PENDING: Roots({bytes.fromhex(s) for s in pending_snapshot_ids(store)})}


def session_roots(store: Store) -> dict[str, Roots]:
    """Every session's listed snapshot ids (undo points and redo entries)."""
    return {name: Roots({bytes.fromhex(i) for i in journals.load(store, name).ids()})
            for name in journals.session_names(store)}

