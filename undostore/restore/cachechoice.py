"""Whether a restore loads the stat cache, or checks the few files it touches by hashing them.

The checkout asks, before replacing or deleting a file, whether it still holds what the safety
snapshot saw; the stat cache answers without reading the file, and afterwards the restore records
what it wrote there. Both cost the whole cache: loading the ~75,000 entries of an npm tree takes
~0.1 s and saving it again ~0.1 s, while hashing a small file takes ~50 us. For a restore that
touches a few files (an undo of one turn) the cache does not pay: the files it writes are racy
anyway (written moments before the save, so recorded without their stat and hashed by the next
snapshot all the same). So up to `Limits.restore_hash_at_most` touched paths the restore neither
loads nor saves the cache; the entries it leaves are those of the safety snapshot, whose stats
the restore's writes no longer match (new inodes), so the next snapshot hashes those files and
rebuilds their folders' trees, exactly as it would have.

Windows always loads it: the disk has no exec bit there, so the next snapshot takes a restored
file's mode from the entry the restore records.

What a restore records (`record_written`) keeps the safety snapshot's watchman clock: that clock
was taken before the restore's first write, so the next snapshot hears of every path written
since (by the restore or anyone else) and compares each with the stat recorded here. Records
stay whole (every name the walk would list, files first); a file the restore created goes in as
an entry only, so the next snapshot checks it against the ignore rules of that moment. A folder
whose record then lists exactly the target's entries keeps the target's tree id (`_claimable`),
so the next snapshot, finding its files as recorded, encodes it no more than an unchanged one.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from stat import S_ISREG
from typing import TYPE_CHECKING, NamedTuple

from undostore.git.objects import MODE_LINK
from undostore.limits import DEFAULT_LIMITS
from undostore.platform import IS_WINDOWS
from undostore.snapshot.capture import count_files, split_record
from undostore.snapshot.ignore import UNDOSTORE_IGNORE
from undostore.snapshot.walk import untrusted_listing
from undostore.store.statcache import (
    ENTRY,
    ENTRY_TAIL,
    Record,
    StatCache,
    join_names,
    listing_part,
    mode_only_entry,
    packed_entries,
    packed_st_mode,
    packed_times,
    racy_times,
)

if TYPE_CHECKING:
    from undostore.restore.plan import RestorePlan



def uses_cache(plan: RestorePlan, windows: bool = IS_WINDOWS,
               hash_at_most: int = DEFAULT_LIMITS.restore_hash_at_most) -> bool:
    """Whether the restore of `plan` should load (and later save) the stat cache: it touches
    more than `hash_at_most` paths."""
    touched = len(plan.create) + len(plan.modify) + len(plan.delete) + len(plan.chmod)
    return windows or touched > hash_at_most


def cache_for(uses: bool, cache_path: str, identity: str) -> StatCache:
    """The cache to check files with: the loaded one where the restore `uses` it
    (`uses_cache`), else an empty one that makes every check hash the file."""
    if uses:
        return StatCache.load(cache_path, identity)
    return StatCache(identity=identity)


class FolderTrees(NamedTuple):
    """Tree ids by folder of the files before a restore and of its target (plan.FlatTree's
    `trees`), for a plan that makes every change between the two: a folder where it leaves a
    difference (a file `.undostoreignore` keeps out), or whose target body is not what a
    snapshot encodes, has none (`FlatTree.drop_trees`, `FlatTree.keep_canonical_trees`)."""

    before: Mapping[str, bytes]
    after: Mapping[str, bytes]


def record_written(cache: StatCache, plan: RestorePlan,
                   written: dict[str, bytes | None], removed_dirs: Iterable[str],
                   now_ns: int, made_dirs: Iterable[str] = (),
                   trees: FolderTrees | None = None, last_stamp: int | None = None,
                   windows: bool = IS_WINDOWS) -> tuple[dict[str, Record], int]:
    """(records, file count) after the restore of `plan`: deleted files and removed folders
    gone, each written file's entry from its stat (mode only when racy or touched by someone
    else after the write, so the next snapshot hashes it; `last_stamp`: see `_racy`), a
    planned file not written (or a link written as a file: `_link_as_file`) left without an
    entry; every folder holding a touched path, and those above, without a tree id (the next
    snapshot re-encodes them from their entries), or with `trees`, the target's where that
    holds (`_claimable`); a folder the restore made (`made_dirs`) gets a record of its own: its
    created files, then the folders it made in it. Other records stay as they are."""
    records = dict(cache.records)
    removed = set(removed_dirs)
    if removed:
        for path in [p for p in records if p in removed or _under(p, removed)]:
            del records[path]
    edits: dict[str, dict[str, bytes | None]] = {}   # name -> its packed entry (ENTRY)
    for path in plan.delete:
        folder, _, name = path.rpartition("/")
        edits.setdefault(folder, {})[name] = None
    for path in [*plan.create, *plan.modify, *plan.chmod]:
        folder, _, name = path.rpartition("/")
        mode, sha = plan.after[path]
        seen = written.get(path)   # its fingerprint, packed: an entry's first bytes
        if path not in written or _link_as_file(mode, seen, windows):
            entry = None   # not written as planned: no entry, the next snapshot hashes it
        elif seen is None or _racy(seen, now_ns, last_stamp):
            entry = ENTRY.pack(*mode_only_entry(mode, sha))
        else:
            entry = seen + ENTRY_TAIL.pack(mode, sha)
        edits.setdefault(folder, {})[name] = entry
    for path in removed:
        folder, _, name = path.rpartition("/")
        edits.setdefault(folder, {})
    deleted = set(plan.delete)
    made = {path for path in made_dirs if path not in records}
    for folder, changes in edits.items():
        record = records.get(folder)
        if record is not None:
            records[folder] = _edited(folder, record, cache.records, changes, deleted, removed)
    records.update(_made_records(made, edits))
    claimable = _claimable(cache, plan, trees, made)
    done: set[str] = set()
    for folder in {_parent(path) for path in [*plan.touched(), *removed]}:
        while folder not in done:
            done.add(folder)
            record = records.get(folder)
            if record is not None and record.tree_id is not False:
                # A folder above the changes keeps its stamp: its own listing is as it was
                # (a change in it moves its mtime, which the stamp holds), so the next walk
                # reuses it and only its tree is encoded again. One the restore changed
                # keeps only the part of its `.gitignore` (`untrusted_listing`): its listing is
                # read again, and the folders below it still reuse theirs while that file's
                # stat is unchanged (a rewrite by the restore gives it a new inode). It keeps
                # the names its listing found ignored, too: a restore writes no ignored file.
                stamp, ignored = None, None
                if folder in edits and folder not in made:
                    before = cache.records.get(folder)
                    if before is not None and before.stamp is not None:
                        stamp, ignored = listing_part(untrusted_listing(before.stamp),
                                                      before.ignored)
                elif folder not in made:
                    stamp, ignored = record.stamp, record.ignored
                tree = trees.after[folder] if trees and folder in claimable else False
                records[folder] = record._replace(tree_id=tree, stamp=stamp, ignored=ignored)
            if not folder:
                break
            folder = _parent(folder)
    return records, count_files(records, cache.records, cache.count)


def _claimable(cache: StatCache, plan: RestorePlan, trees: FolderTrees | None,
               made: set[str]) -> set[str]:
    """The folders whose records may keep the target's tree id after the restore of `plan`:
    those whose record before it was that of the files before it, in which it created no
    file, and whose changed sub-folders are claimable too (a folder it made never is). Their
    records then list exactly the target's entries (what a snapshot splices their old tree
    body with, capture.py), and the next snapshot trusts the id only where every entry still
    matches, its names are those listed and its sub-folders' ids are those recorded. The root
    is never one: its tree id is what the mode record and gc's check of the cache go by."""
    if trees is None:
        return set()
    grown = {_parent(path) for path in plan.create}
    children: dict[str, list[str]] = {}
    for folder in trees.after:
        if folder:
            children.setdefault(_parent(folder), []).append(folder)
    claimable: set[str] = set()
    for folder in sorted(trees.after, key=lambda f: f.count("/") if f else -1, reverse=True):
        record = cache.records.get(folder)
        before = trees.before.get(folder)
        if (folder and folder not in made and folder not in grown and record is not None
                and before is not None and record.tree_id == before
                and all(sub in claimable for sub in children.get(folder, ()))):
            claimable.add(folder)
    return claimable


def _edited(folder: str, record: Record, records: dict[str, Record],
            changes: dict[str, bytes | None], deleted: set[str], removed: set[str]) -> Record:
    """`record` with `changes` (name -> packed entry, None: no entry) applied; see
    `record_written`. `records`: those before the restore, which tell its sub-folders from
    its files. Entries stay packed: a decoded one costs ~3x the memory."""
    prefix = folder + "/" if folder else ""
    files, subdirs = split_record(folder, record, records)
    subdirs = [name for name in subdirs if prefix + name not in removed]
    entries = packed_entries(record)
    for name, entry in changes.items():
        if entry is None:
            entries.pop(name, None)
        else:
            entries[name] = entry
    files = [name for name in files if prefix + name not in deleted]
    listed = set(files)
    ordered = [name for name in files if name in entries]
    ordered += [name for name in entries if name not in listed]   # created: entries only
    names = join_names([*files, *subdirs])
    entry_names = None if ordered == files else join_names(ordered)
    # No stamp: a folder the restore touched is read again by the next walk.
    return Record(record.tree_id, names, entry_names, b"".join([entries[n] for n in ordered]))


def _made_records(made: set[str], edits: dict[str, dict[str, bytes | None]]
                  ) -> dict[str, Record]:
    """Records of the folders a restore made: their names are the folders it made there, and
    the files it wrote there are entries only, like the files it creates in other folders
    (the next snapshot checks them against the ignore rules of the day, and their stats)."""
    subdirs: dict[str, list[str]] = {}
    for path in made:
        if path:
            subdirs.setdefault(_parent(path), []).append(path.rpartition("/")[2])
    out: dict[str, Record] = {}
    for folder in made:
        changes = edits.get(folder, {})
        written = sorted(name for name, entry in changes.items() if entry is not None)
        out[folder] = Record(False, join_names(sorted(subdirs.get(folder, []))),
                             join_names(written) if written else None,
                             b"".join([changes[name] for name in written]))  # type: ignore[misc]
    return out


def _link_as_file(mode: int, fingerprint: bytes | None, windows: bool) -> bool:
    """Whether a planned symlink is a file: the file system refused the link and the restore
    wrote its target as a file. Outside Windows a snapshot hashes that as the file it is (on
    Windows it stays a link, as with git's core.symlinks=false: hashing._git_mode)."""
    return (mode == MODE_LINK and fingerprint is not None and not windows
            and S_ISREG(packed_st_mode(fingerprint)))


def _racy(fingerprint: bytes, now_ns: int, last_stamp: int | None) -> bool:
    """Whether a written file's stat proves nothing yet. It does once the restore's own last
    change on the same file system was stamped later than the file's times (git's rule against
    its index file's mtime: that tick of the file system's clock is over, so a later write
    stamps the file anew), or once the clock has moved past the margin."""
    mtime, ctime = packed_times(fingerprint)
    if last_stamp is not None and max(mtime, ctime) < last_stamp:
        return False
    return racy_times(mtime, ctime, now_ns)


def _parent(path: str) -> str:
    return path.rpartition("/")[0]


def _under(path: str, folders: set[str]) -> bool:
    while path:
        path = _parent(path)
        if path in folders:
            return True
    return False


def drops_clock(plan: RestorePlan) -> bool:
    """Whether the restore touched an ignore file: what is kept may then change anywhere, so
    the next snapshot must walk in full."""
    return any(path == UNDOSTORE_IGNORE or path.rpartition("/")[2] == ".gitignore"
               for path in plan.touched())
