"""Garbage collection owned by the journals: keep what they need, drop the rest, repack.

Under the store lock, `collect`:
1. sweeps the anchors (anchors.sweep), so they match the journals;
2. marks the live set: every tree and blob reachable from the anchors, every journal entry, the
   snapshots of a pending restore, and the stat cache (its tree ids and blob ids: the next
   snapshot reuses them without checking the store). Only tree objects are read; a blob is live
   by its id, never inflated;
3. also keeps every snapshot handed out outside the journals within the grace period (24 hours
   by default: store/recent.py lists them; a journal-listed id is the journal's to keep), and
   leaves alone every pack that is large and fully live (so a gc with little to do copies
   little); no pack is kept whole for being young, so `drop` then `gc` frees at once;
4. copies the live objects of the remaining packs into one new pack, record by record,
   verbatim (a whole record's compressed bytes are valid in any pack; its CRC-32 is checked
   against the old index on the way), then deletes those old packs. The new pack is complete and
   durable before anything is deleted, so a crash at any point loses nothing;
5. removes orphaned temporary files and index-less packs older than an hour (or the grace
   period, if shorter): younger ones may be a pack still being written.

Memory stays bounded by the number of objects (ids and offsets), never by their size: records are
copied in chunks of at most 1 MiB.
"""

from __future__ import annotations

import hashlib
import os
import struct
import time
import zlib
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from undostore.errors import IncompleteSnapshotError, StoreError, UsageError, from_oserror
from undostore.git.objects import (
    MODE_TREE,
    TREE,
    PackIndexSet,
    decode_tree,
    encode_pack_index,
    pack_record_header,
)
from undostore.git.packfile import DeltaRecord, PackFile, PackSet, Record, pack_census
from undostore.history import anchors
from undostore.history import journal as journals
from undostore.restore.restorelog import pending_snapshot_ids
from undostore.store.atomic import TEMP_PREFIX, fsync_dir, replace_with_retry
from undostore.store.recent import KEEP_SECONDS as RECENT_KEEP_SECONDS
from undostore.store.recent import recent_ids
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
        store.close()   # our own readers hold packs open, and Windows cannot delete open files
        now = time.time()
        census = pack_census(store.pack_dir)
        result.packs_before = len(census)
        result.objects_before = sum(count for _, count in census.values())
        if census:
            _collect_packs(store, now - grace, result)
        result.freed_bytes += _clean_temporaries(store.path, store.pack_dir,
                                                 now - min(grace, TEMP_GRACE_SECONDS), result)
        census = pack_census(store.pack_dir)
        result.packs_after = len(census)
        result.objects_after = sum(count for _, count in census.values())
    result.seconds = time.perf_counter() - started
    return result


def _collect_packs(store: Store, since: float, result: GcResult) -> None:
    tree_roots, live = _roots(store)
    packs = PackSet(store.pack_dir)
    try:
        tree_roots |= recent_ids(store.path, since)  # ids handed out within the grace
        result.missing = _mark(store, packs, tree_roots, live)
        result.live_objects = len(live)
        _rewrite(store, packs, _choose(packs.packs, live), live, result)
    finally:
        packs.close()
        store.close()
    # gc kept everything the stat cache vouches for, but moved it: tell the cache where.
    rebind_packs(os.path.join(store.cache_dir, "statcache"), store.identity,
                 PackIndexSet(store.pack_dir).pack_names())


def _roots(store: Store) -> tuple[set[bytes], set[bytes]]:
    """(snapshot and cached tree ids to walk, blob ids live as they are)."""
    snapshots: set[str] = set(anchors.anchored_ids(store))
    for name in journals.session_names(store):
        snapshots |= journals.load(store, name).ids()
    snapshots |= set(pending_snapshot_ids(store))
    trees = {bytes.fromhex(s) for s in snapshots if len(s) == 40}
    cache = StatCache.load(os.path.join(store.cache_dir, "statcache"), store.identity)
    # The cache is a hint file: take each value shaped like an id, never fail on one that is not.
    trees.update(state[0] for state in cache.folders.values()
                 if isinstance(state, tuple) and state and _is_id(state[0]))
    blobs = {entry[6] for entry in cache.files.values()
             if isinstance(entry, tuple) and len(entry) > 6 and _is_id(entry[6])}
    return trees, blobs


def _is_id(value: Any) -> bool:
    return isinstance(value, bytes) and len(value) == 20


def _mark(store: Store, packs: PackSet, roots: set[bytes], live: set[bytes]) -> list[str]:
    """Add every object reachable from `roots` to `live`, reading trees only; returns the hex ids
    of reachable objects that the store lacks."""
    missing: list[str] = []
    seen_trees: set[bytes] = set()
    stack = list(roots)
    while stack:
        sha = stack.pop()
        if sha in seen_trees:
            continue
        seen_trees.add(sha)
        live.add(sha)
        body = _tree_body(store, packs, sha)
        if body is None:
            missing.append(sha.hex())
            continue
        for mode, _name, child in decode_tree(body):
            if mode == MODE_TREE:
                if child not in seen_trees:
                    stack.append(child)
            elif mode != _GITLINK:
                live.add(child)
    missing.extend(b.hex() for b in live - seen_trees if b not in packs)
    return missing


def _tree_body(store: Store, packs: PackSet, sha: bytes) -> bytes | None:
    """A tree's body, hash-checked; None if the store lacks it. A damaged tree stops gc:
    what it references cannot be known, so nothing may be deleted."""
    found = packs.where.get(sha)
    if found is None:
        return None
    pack, record = found
    try:
        type_num, body = pack.body(record)
    except DeltaRecord:
        type_num, body = store.read(sha)
    except (OSError, ValueError) as err:
        raise IncompleteSnapshotError(
            f"tree {sha.hex()} is damaged ({err}); gc stopped and deleted nothing. "
            "Run `undostore verify`, then drop the sessions that need it",
            corrupt=[sha.hex()], path=pack.pack_path) from err
    if type_num != TREE:
        raise IncompleteSnapshotError(f"object {sha.hex()} is listed as a snapshot or folder but "
                                      "is not a tree; gc stopped and deleted nothing",
                                      corrupt=[sha.hex()])
    return body


def _choose(old: list[PackFile], live: set[bytes]) -> list[PackFile]:
    """The old packs to rewrite: those holding a dead object, and the small ones."""
    doomed = []
    for pack in old:
        dead = any(r.sha not in live for r in pack.records)
        if dead or pack.pack_size < SMALL_PACK_BYTES:
            doomed.append((pack, dead))
    if len(doomed) == 1 and not doomed[0][1]:
        return []   # a single fully-live pack: rewriting it would change nothing
    return [pack for pack, _ in doomed]


def _rewrite(store: Store, packs: PackSet, doomed: list[PackFile], live: set[bytes],
             result: GcResult) -> None:
    if not doomed:
        return
    doomed_names = {p.base for p in doomed}
    kept: set[bytes] = set()
    for pack in packs.packs:
        if pack.base not in doomed_names:
            kept.update(r.sha for r in pack.records)
    plan: list[tuple[PackFile, Record]] = []
    planned: set[bytes] = set()
    for pack in doomed:
        for record in pack.records:
            if record.sha in live and record.sha not in kept and record.sha not in planned:
                planned.add(record.sha)
                plan.append((pack, record))
    new_base = _write_pack(store, store.pack_dir, plan) if plan else None
    if new_base is not None and new_base not in doomed_names:
        result.freed_bytes -= os.path.getsize(new_base + ".pack") + os.path.getsize(
            new_base + ".idx")
    for pack in doomed:
        if pack.base == new_base:
            continue   # the same records in the same order: the "new" pack is this one
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


def _write_pack(store: Store, pack_dir: str, plan: list[tuple[PackFile, Record]]) -> str:
    """One new pack holding the planned records; returns its base path (visible once its index
    is in place)."""
    tmp = os.path.join(pack_dir, f"{TEMP_PREFIX}{os.getpid()}-{os.urandom(4).hex()}.pack")
    idx_tmp = tmp[:-5] + ".idx"
    entries: list[tuple[bytes, int, int]] = []
    try:
        with open(tmp, "wb") as out:
            digest = hashlib.sha1()

            def put(data: bytes) -> None:
                digest.update(data)
                out.write(data)

            put(b"PACK" + struct.pack(">LL", 2, len(plan)))
            offset = 12
            for pack, record in plan:
                crc, length = _copy_record(store, pack, record, put)
                entries.append((record.sha, offset, crc))
                offset += length
            checksum = digest.digest()
            out.write(checksum)
            out.flush()
            os.fsync(out.fileno())
        for pack, _ in plan:
            pack.close()   # the new pack may replace one of them (same content, same name)
        with open(idx_tmp, "wb") as idx:
            idx.write(encode_pack_index(entries, checksum))
            idx.flush()
            os.fsync(idx.fileno())
        base = os.path.join(pack_dir, f"pack-{checksum.hex()}")
        if os.path.exists(base + ".pack") and os.path.exists(base + ".idx"):
            # A pack is named by the hash of its bytes: this one is already there (and may be
            # open in another process, which Windows would not let us replace).
            return base
        replace_with_retry(tmp, base + ".pack")
        replace_with_retry(idx_tmp, base + ".idx")
        fsync_dir(pack_dir)
        return base
    except OSError as err:
        raise from_oserror(err, "write the repacked objects", tmp, StoreError) from err
    finally:
        for path in (tmp, idx_tmp):
            try:
                os.unlink(path)
            except OSError:
                pass


def _copy_record(store: Store, pack: PackFile, record: Record, put) -> tuple[int, int]:  # noqa: ANN001
    """Append one object to the new pack; returns (CRC-32, length) of what was written."""
    try:
        pack.whole_header(record)
    except DeltaRecord:
        # Not written by undostore: store the object whole (its base may not be kept).
        type_num, body = store.read(record.sha)
        data = pack_record_header(type_num, len(body)) + zlib.compress(body, 1)
        put(data)
        return zlib.crc32(data) & 0xFFFFFFFF, len(data)
    except ValueError as err:
        raise _damaged(pack, record, str(err)) from err
    crc = 0
    for block in pack.chunks(record):
        crc = zlib.crc32(block, crc)
        put(block)
    if crc & 0xFFFFFFFF != record.crc:
        raise _damaged(pack, record, "CRC mismatch")
    return record.crc, record.length


def _damaged(pack: PackFile, record: Record, why: str) -> IncompleteSnapshotError:
    return IncompleteSnapshotError(
        f"object {record.sha.hex()} is damaged ({why}); gc stopped and deleted nothing. "
        "Run `undostore verify`, then drop the sessions that need it",
        corrupt=[record.sha.hex()], path=pack.pack_path)


def _clean_temporaries(store_path: str, pack_dir: str, cutoff: float, result: GcResult) -> int:
    """Remove temporary files and index-less packs older than `cutoff`; returns bytes freed."""
    freed = 0
    for folder, dirs, files in os.walk(store_path):
        if folder == store_path and "restore" in dirs:
            dirs.remove("restore")   # a pending restore's files are the restore module's
        names = set(files)
        for name in files:
            orphan_pack = (folder == pack_dir and name.endswith(".pack")
                           and name[:-5] + ".idx" not in names)
            if TEMP_PREFIX not in name and not orphan_pack:
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

