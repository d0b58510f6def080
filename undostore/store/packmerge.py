"""Small packs merged into one as they pile up.

Every snapshot with something new, every tool call's capture and every turn segment undostore
builds writes a pack of its own, and every reader opens every pack and may look an id up in
each: a session's tool calls left hundreds between two gcs, and every call grew slower (figures
in docs/design.md, "Attribution by tool call"). So when more than
`MERGE_AT` packs under `MERGE_BYTES` lie in the store, their records are copied verbatim (each
checked) into one new durable pack, the stat cache is told where its objects are now, and the
old packs are deleted, index first. Nothing is dropped, so nothing needs proving unreachable:
gc's rewrite without its marking (`write_copies` writes for both). A pack holding an object
none of whose copies checks stays whole; one another process holds open where that forbids
deleting it (Windows) stays too (its objects are then in two packs, which readers allow, until
the next merge or gc). Under the store lock."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from undostore.errors import IncompleteSnapshotError, StoreError, from_oserror
from undostore.git.packfile import DELTAS, Pack, Record, RecordDamaged, complete_packs
from undostore.git.packwriter import PackWriter
from undostore.git.reader import ObjectReader
from undostore.store.statcache import rebind_packs

if TYPE_CHECKING:
    from undostore.store.store import Store

MERGE_AT = 24            # small packs a store may hold before they are merged
MERGE_BYTES = 1 << 20    # a pack this small is merged: a merged pack soon outgrows it


def merge_small_packs(store: Store) -> int:
    """Merge the store's small packs into one when there are more than `MERGE_AT`; how many
    were merged (0: too few to bother). The store lock is held."""
    if _small_count(store.pack_dir) <= MERGE_AT:
        return 0
    store.close()   # our own readers hold packs open, and Windows cannot delete open files
    reader = ObjectReader(store)
    try:
        small = [p for p in reader.packs.values() if p.pack_size < MERGE_BYTES]
        if len(small) <= MERGE_AT:
            return 0
        plan: Copies = {}
        for pack in small:
            for record in pack.records():
                plan.setdefault(record.sha, []).append((pack, record))
        kept: set[str] = set()
        new_base = write_copies(reader, store.pack_dir, plan, kept, [])
        names = {os.path.basename(b) for b in complete_packs(store.pack_dir)}
        merged = [p for p in small if p.base != new_base and p.pack_path not in kept]
        rebind_packs(store.stat_cache_path, store.identity,
                     names - {p.name for p in merged})
        for pack in merged:
            for path in (pack.idx_path, pack.pack_path):   # index first: no index, no pack
                try:
                    os.unlink(path)
                except FileNotFoundError:
                    pass
                except OSError:
                    break   # open elsewhere (Windows): its copies stay until the next merge
    finally:
        reader.close()
        store.close()
    store.refresh()
    return len(merged)


def _small_count(pack_dir: str) -> int:
    """How many complete packs under `MERGE_BYTES` the folder holds (a listing and a stat
    each: what every call pays to learn whether to merge)."""
    count = 0
    for base in complete_packs(pack_dir):
        try:
            count += os.path.getsize(base + ".pack") < MERGE_BYTES
        except OSError:
            continue
    return count


Copies = dict[bytes, list[tuple[Pack, Record]]]   # each object: its copies, tried in turn


def write_copies(reader: ObjectReader, pack_dir: str, plan: Copies, kept: set[str],
                 damaged: list[str]) -> str | None:
    """One new pack holding one copy of each planned object, copied verbatim (delta records
    whole), trying its copies in turn; an object none of whose copies checks stays where it is:
    its id goes to `damaged`, its packs to `kept` (not to be deleted). The new pack's base
    path (None: nothing was written). Shared with gc's rewrite."""
    writer = PackWriter(pack_dir)
    try:
        for sha, copies in plan.items():
            if not any(copy_record(reader, writer, pack, record) for pack, record in copies):
                damaged.append(sha.hex())
                kept.update(pack.pack_path for pack, _ in copies)
        for pack in {pack for copies in plan.values() for pack, _ in copies}:
            pack.close()   # the new pack may replace one of them (same content, same name)
        return writer.commit()
    except OSError as err:
        writer.abort()
        raise from_oserror(err, "write the copied objects", pack_dir, StoreError) from err
    except BaseException:
        writer.abort()
        raise


def copy_record(reader: ObjectReader, writer: PackWriter, pack: Pack, record: Record) -> bool:
    """Copy one record into `writer`; False (the damage recorded) if it does not check."""
    try:
        if pack.header(record.offset)[0] in DELTAS:
            # Not written by undostore: store the object whole (its base may not be kept).
            type_num, body = reader.read(record.sha)
            writer.add(type_num, record.sha, body)
        else:
            writer.copy(pack, record)
        return True
    except (RecordDamaged, IncompleteSnapshotError) as err:
        if reader.on_damage is not None:
            reader.on_damage(record.sha, pack.name, str(err))
        return False
