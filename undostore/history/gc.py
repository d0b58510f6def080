"""Garbage collection owned by the journals: keep what they need, drop the rest, repack.

Under the store lock: sweep the anchors to match the journals; mark as live every tree and blob
reachable from them, a pending restore, the stat cache (trees are read, blobs never), the files
as each tool call in the activity record began and ended (history/activity.py) and every
snapshot the operation log names within the grace period (a day by default: handed out, or let
go by a journal; history/reflog.py); leave large fully-live packs alone (no pack is kept for
being young: `drop` then `gc` frees at once); copy the live records of the other packs verbatim
(CRC-checked) into one durable new pack, then delete those packs; remove temp files older than
an hour (or the grace, if shorter: a younger one may be a pack being written). It deletes only
what it copied or proved unreachable: index-less packs are re-indexed and kept, bad indexes
healed (store/damage.py), a pack holding a record that fails its check stays, a damaged tree
stops all pruning, and what it could not account for is reported (`damaged`), with
`verify --repair` as the way on.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from undostore.errors import IncompleteSnapshotError, UsageError
from undostore.fileio import TEMP_PREFIX
from undostore.git.objects import MODE_GITLINK, MODE_TREE, Entry
from undostore.git.packfile import DAMAGED_DIR, Pack, Record
from undostore.git.reader import ObjectReader
from undostore.git.treewalk import walk
from undostore.history import activity, anchors
from undostore.history import journal as journals
from undostore.history.reflog import handed_out
from undostore.restore.restorelog import pending_snapshot_ids
from undostore.store import damage, moderecord
from undostore.store.packmerge import write_copies
from undostore.store.recent import KEEP_SECONDS as RECENT_KEEP_SECONDS
from undostore.store.statcache import StatCache, rebind_packs

if TYPE_CHECKING:
    from undostore.store.store import Store

DEFAULT_GRACE_SECONDS = RECENT_KEEP_SECONDS   # ids handed out outside sessions stay a day
TEMP_GRACE_SECONDS = 3600.0       # a younger temp file may be a pack still being written
SMALL_PACK_BYTES = 16 << 20
_GITLINK = 0o160000


@dataclass
class GcResult:
    freed_bytes: int = 0
    objects_before: int = 0
    objects_after: int = 0
    packs_before: int = 0
    packs_after: int = 0
    live_objects: int = 0          # counted only when some pack was old enough to examine
    anchors_created: int = 0
    anchors_released: int = 0
    temp_files_removed: int = 0
    missing: list[str] = field(default_factory=list)        # live ids the store lacks
    damaged: list[str] = field(default_factory=list)        # ids whose copies failed a check
    kept_packs: list[str] = field(default_factory=list)     # packs left whole because of them
    healed_packs: list[str] = field(default_factory=list)   # "<pack>: what was done"
    busy_files: list[str] = field(default_factory=list)     # old files that could not be removed
    seconds: float = 0.0
    kept: list[dict[str, Any]] = field(default_factory=list)  # what holds the rest (retention)

    def to_json(self) -> dict[str, Any]:
        return {"freed_bytes": self.freed_bytes, "objects_before": self.objects_before,
                "objects_after": self.objects_after, "packs_before": self.packs_before,
                "packs_after": self.packs_after, "live_objects": self.live_objects,
                "anchors_created": self.anchors_created,
                "anchors_released": self.anchors_released,
                "temp_files_removed": self.temp_files_removed,
                "missing": self.missing[:100], "missing_count": len(self.missing),
                "damaged": self.damaged[:100], "kept_packs": self.kept_packs,
                "healed_packs": self.healed_packs,
                "busy_files": self.busy_files, "seconds": round(self.seconds, 4),
                "kept": self.kept}


def collect(store: Store, grace_seconds: float | None = None) -> GcResult:
    """Sweep anchors, prune what nothing needs, repack, clean up (see the module docstring)."""
    grace = DEFAULT_GRACE_SECONDS if grace_seconds is None else float(grace_seconds)
    if not grace >= 0:
        raise UsageError(f"grace period must be zero or more seconds, not {grace_seconds!r}")
    started = time.perf_counter()
    result = GcResult()
    with store.lock:
        swept = anchors.sweep(store)
        result.anchors_created, result.anchors_released = swept.created, swept.released
        # An id flipped in an index, or a lost index, would otherwise let gc drop records.
        result.healed_packs = store.heal(full=True)
        store.close()   # our own readers hold packs open, and Windows cannot delete open files
        now = time.time()
        reader = ObjectReader(store)
        try:
            result.packs_before, result.objects_before = _census(reader)
            if reader.packs:
                _collect_packs(store, reader, now - grace, result)
        finally:
            reader.close()
            store.close()
        result.freed_bytes += _clean_temporaries(store.path, store.pack_dir,
                                                 now - min(grace, TEMP_GRACE_SECONDS), result)
        with ObjectReader(store.pack_dir) as after:
            result.packs_after, result.objects_after = _census(after)
            damage.prune(store.path, after.pack_names())
    result.seconds = time.perf_counter() - started
    return result


def _census(reader: ObjectReader) -> tuple[int, int]:
    """(packs, objects) of a store's complete packs."""
    return len(reader.packs), sum(p.index.count for p in reader.packs.values())


def _collect_packs(store: Store, reader: ObjectReader, since: float, result: GcResult) -> None:
    tree_roots, live = _roots(store)
    packs = list(reader.packs.values())
    tree_roots |= handed_out(store, since)  # ids handed out or let go within the grace
    result.missing = _mark(reader, tree_roots, live, result.damaged)
    result.live_objects = len(live)
    if result.damaged:
        return   # what a damaged tree lists is unknown: nothing is proven unreachable
    result.freed_bytes += moderecord.prune(store.path, tree_roots)
    new_base = _rewrite(store, reader, _choose(packs, live), live, result)
    # gc kept everything the stat cache vouches for, but moved it: tell the cache where.
    names = {p.name for p in packs if os.path.exists(p.idx_path)}
    if new_base is not None:
        names.add(os.path.basename(new_base))
    rebind_packs(store.stat_cache_path, store.identity, names)


def _roots(store: Store) -> tuple[set[bytes], set[bytes]]:
    """(snapshot and cached tree ids to walk, blob ids live as they are)."""
    snapshots: set[str] = set(anchors.anchored_ids(store))
    for name in journals.session_names(store):
        snapshots |= journals.load(store, name).ids()
    snapshots |= set(pending_snapshot_ids(store))
    # The files as each recent tool call began and ended: other conversations' calls weigh
    # them (history/attribution.py) while the record keeps them (while a call they overlap
    # runs, and minutes after).
    snapshots |= {sha for span in activity.load(store.cache_dir)
                  for sha in (span.before, span.after) if sha}
    trees = {bytes.fromhex(s) for s in snapshots if len(s) == 40}
    held = StatCache.load(store.stat_cache_path, store.identity).held_ids()
    return trees | held.trees, held.blobs



def _mark(reader: ObjectReader, roots: set[bytes], live: set[bytes],
          damaged: list[str]) -> list[str]:
    """Add every object reachable from `roots` to `live`, reading trees only; returns the hex ids
    of reachable objects that the store lacks, and adds damaged trees to `damaged`."""
    missing: list[str] = []
    seen: set[bytes] = set()

    def read(sha: bytes) -> list[Entry]:
        seen.add(sha)
        live.add(sha)
        try:
            return reader.read_tree(sha)
        except IncompleteSnapshotError as err:
            (missing if err.missing else damaged).append(sha.hex())
            return []

    for root in roots:
        if root not in seen:
            for _path, mode, sha in walk(read, root, enter=lambda s: s not in seen):
                if mode not in (MODE_GITLINK, MODE_TREE):
                    live.add(sha)
    present = {sha for pack in reader.packs.values() for sha in pack.index.name_list()}
    missing.extend(b.hex() for b in live - seen
                   if b not in present or (reader.skip and b not in reader))
    return missing


def _choose(packs: list[Pack], live: set[bytes]) -> list[Pack]:
    """The packs to rewrite: those holding a dead object, and the small ones."""
    doomed = []
    for pack in packs:
        dead = not live.issuperset(pack.index.name_list())
        if dead or pack.pack_size < SMALL_PACK_BYTES:
            doomed.append((pack, dead))
    if len(doomed) == 1 and not doomed[0][1]:
        return []   # a single fully-live pack: rewriting it would change nothing
    return [pack for pack, _ in doomed]


def _rewrite(store: Store, reader: ObjectReader, doomed: list[Pack], live: set[bytes],
             result: GcResult) -> str | None:
    """Copy the live records of `doomed` into one new pack, then delete them; returns the new
    pack's base path."""
    if not doomed:
        return None
    doomed_names = {p.base for p in doomed}
    skip = reader.skip
    elsewhere: set[bytes] = set()   # live ids with an intact-looking copy in a pack that stays
    for pack in reader.packs.values():
        if pack.base not in doomed_names:
            elsewhere.update(sha for sha in pack.index.name_list() if (sha, pack.name) not in skip)
    # Every copy of each live object the doomed packs hold, known-damaged copies last.
    plan: dict[bytes, list[tuple[Pack, Record]]] = {}
    for pack in doomed:
        for record in pack.records():
            if record.sha in live and record.sha not in elsewhere:
                plan.setdefault(record.sha, []).append((pack, record))
    for copies in plan.values():
        copies.sort(key=lambda copy: (copy[1].sha, copy[0].name) in skip)
    kept: set[str] = set()
    new_base = (write_copies(reader, store.pack_dir, plan, kept, result.damaged) if plan
                else None)
    result.kept_packs = sorted(kept)
    if new_base is not None and new_base not in doomed_names:
        result.freed_bytes -= os.path.getsize(new_base + ".pack") + os.path.getsize(
            new_base + ".idx")
    for pack in doomed:
        if pack.base == new_base or pack.pack_path in kept:
            continue   # the same records (the "new" pack is this one), or a damaged record
        pack.close()
        for path in (pack.idx_path, pack.pack_path):   # index first: no index, no pack
            try:
                size = os.path.getsize(path)
                os.unlink(path)
                result.freed_bytes += size
            except FileNotFoundError:
                pass
            except OSError:
                result.busy_files.append(path)   # open elsewhere (Windows); next gc retries
                break
    return new_base


def _clean_temporaries(store_path: str, pack_dir: str, cutoff: float, result: GcResult) -> int:
    """Remove undostore's temporary files older than `cutoff`; returns bytes freed."""
    freed = 0
    for folder, dirs, files in os.walk(store_path):
        if folder == store_path and "restore" in dirs:
            dirs.remove("restore")   # a pending restore's files are the restore module's
        if folder == pack_dir and DAMAGED_DIR in dirs:
            dirs.remove(DAMAGED_DIR)   # kept for whoever wants to look: never deleted
        for name in files:
            if TEMP_PREFIX not in name:
                continue
            path = os.path.join(folder, name)
            try:
                st = os.stat(path)
                if st.st_mtime > cutoff:
                    continue
                os.unlink(path)
            except OSError:
                continue
            freed += st.st_size
            result.temp_files_removed += 1
    return freed

