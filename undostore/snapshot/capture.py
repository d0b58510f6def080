"""One folder at a time: match its files against the stat cache, then build the trees bottom-up
and the stat cache's new records.

Lean on purpose (a no-change snapshot of a big tree should cost the stat calls and little else):
a folder whose files all match the cache, in the cache's order, keeps the cache's packed entries
and names as they are, so nothing is held per file once the folder is matched; a folder whose
names, files and sub-folder trees are unchanged keeps its cached tree id without re-encoding
(git's cache-tree idea).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import NamedTuple

from undostore.errors import UndostoreError
from undostore.git.objects import MODE_TREE, TREE, encode_tree, hash_object
from undostore.git.packwriter import PackWriter
from undostore.limits import DEFAULT_LIMITS
from undostore.platform import IS_WINDOWS
from undostore.snapshot.treepatch import TreeEntry, patch_tree
from undostore.snapshot.walk import (
    FileEntry,
    Folder,
    Known,
    Matcher,
    trusted_stamp,
)
from undostore.store.statcache import (
    ENTRY,
    FINGERPRINT,
    Entry,
    Record,
    StatCache,
    entries_follow_names,
    entry_racy,
    join_names,
    listing_part,
    mode_only_indexes,
    pack_entries,
    packed_ids,
    racy_kept,
    racy_times,
    record_entries,
    split_names,
    unpack_entry,
)
from undostore.store.store import Store

EMPTY_TREE = bytes.fromhex("4b825dc642cb6eb9a060e54bf8d69288fbee4904")


class Delta(NamedTuple):
    """How a patched folder's files follow from its record's: the record's first `old_files`
    names (its files) less `gone`, then the names added (changes.py)."""

    old_files: int
    gone: frozenset[str]


# A folder with at least `Limits.splice_min_files` files and at most this many to hash is built
# from its record and old tree with the changes spliced in (treepatch.py), not entry by entry.
DELTA_MAX_MISSES = 64


class EntryList:
    """A folder's entries packed as the stat cache keeps them (`ENTRY`, 60 bytes each, against
    ~300 for an entry tuple), with a flag per index still to be hashed; reads unpack one."""

    __slots__ = ("blob", "_pending", "_missing")

    def __init__(self, count: int) -> None:
        self.blob = bytearray(count * ENTRY.size)
        self._pending = bytearray(count)    # 1: the entry is still to be hashed
        self._missing = 0

    def __len__(self) -> int:
        return len(self.blob) // ENTRY.size

    def __getitem__(self, index: int) -> Entry | None:
        if self._pending[index]:
            return None
        return unpack_entry(self.blob, index * ENTRY.size)

    def __setitem__(self, index: int, entry: Entry | None) -> None:
        was = self._pending[index]
        if entry is None:
            self._pending[index] = 1
            self._missing += not was
        else:
            ENTRY.pack_into(self.blob, index * ENTRY.size, *entry)
            self._pending[index] = 0
            self._missing -= was

    def __iter__(self):  # noqa: ANN204 (an iterator of Entry | None)
        return (self[index] for index in range(len(self)))

    def packed(self) -> bytes:
        """Every entry, packed (all must be filled in). The list is emptied: its record is
        the last use, and a snapshot's peak is when the records are saved."""
        assert not self._missing
        data = bytes(self.blob)
        self.blob = bytearray()
        self._pending = bytearray()
        return data


class Work:
    """A folder on its way to a tree: `entries` per file (None where a hash is pending), or
    None when the cached record's packed entries hold exactly as they are. With `delta`,
    `entries` holds only the files to hash, by index, the others being the record's.
    (A plain class: see `walk.Folder`.)"""

    __slots__ = ("path", "joined", "nfiles", "subdirs", "entries", "record", "hashed", "fresh",
                 "delta", "stamp", "reused", "ignored")

    def __init__(self, path: str, joined: str, nfiles: int, subdirs: list[str],
                 entries: EntryList | list[Entry | None] | dict[int, Entry | None] | None,
                 record: Record | None, delta: Delta | None = None, stamp: bytes | None = None,
                 reused: bool = False, ignored: str | None = None) -> None:
        self.path = path
        self.joined = joined          # names, NUL-joined: files first, then sub-folders
        self.nfiles = nfiles
        self.subdirs = subdirs
        self.entries = entries
        self.record = record          # the folder's record in the loaded cache
        self.hashed = False
        self.fresh: list[int] = []    # entries hashed in this run
        self.delta = delta
        self.stamp = stamp            # the folder's stamp, when its listing may be reused
        self.reused = reused          # its listing came from the cache, its stamp held
        self.ignored = ignored        # the names its listing found ignored (walk.Known)


Todo = list[tuple[Work, int, FileEntry]]


def matcher_for(cache: StatCache) -> Callable[[str], Matcher | None]:
    """Per folder, a test of a file's stat against its cached entry (for `WalkOptions`): the
    walk then keeps nothing for files that match. Racy entries were left out at save time, so
    a match is a file the snapshot need not read."""
    records = cache.records
    windows = IS_WINDOWS
    pack = FINGERPRINT.pack
    size = ENTRY.size
    width = FINGERPRINT.size

    def for_folder(path: str) -> Matcher | None:
        record = records.get(path)
        if record is None or not record.entries:
            return None
        names, entry_names, blob = record.names, record.entry_names, record.entries
        keys = names if entry_names is None else entry_names
        count = len(blob) // size
        cursor = [0, 0]    # where in `keys` the next file is expected, and its entry
        by_name: dict[str, int] = {}

        def match(name: str, st: os.stat_result) -> bool:
            # The listing comes in the cached order unless the folder changed: follow it
            # through the joined names without splitting them (no string per file).
            offset, index = cursor
            end = offset + len(name)
            if (index < count and keys.startswith(name, offset)
                    and (end == len(keys) or keys[end] == "\0")):
                cursor[0], cursor[1] = end + 1, index + 1
                start: int | None = index * size
            else:
                if not by_name:
                    by_name.update((n, i * size)
                                   for i, n in enumerate(keys.split("\0")[:count]))
                start = by_name.get(name)
                if start is None:
                    return False
            return blob[start:start + width] == pack(
                st.st_mtime_ns, st.st_ctime_ns, st.st_size, 0 if windows else st.st_ino,
                st.st_mode)

        return match

    return for_folder


def known_for(cache: StatCache) -> Callable[[str], Known | None]:
    """Per folder, its listing as the cache records it, with the stamp it was read under (for
    `WalkOptions.known`): the walk reuses it while the stamp holds."""
    records = cache.records

    def known(path: str) -> Known | None:
        record = records.get(path)
        if record is None or record.stamp is None:
            return None
        files, subdirs = split_record(path, record, records)
        blob = record.entries
        # A racy file's mode-only entry in such a record matches no stat: it is hashed again.
        aligned = entries_follow_names(record) and len(blob) == ENTRY.size * len(files)
        return Known(record.stamp, files, subdirs, record.names, blob if aligned else None,
                     record.ignored)

    return known


def match_folder(folder: Folder, cache: StatCache, todo: Todo, delta: Delta | None = None,
                 splice_min_files: int = DEFAULT_LIMITS.splice_min_files) -> Work:
    """A scanned folder as work: files the walk's matcher vouched for take their cached
    entries, the others go to `todo` for hashing. `delta`: how a patched folder's names follow
    from its record's (one of `splice_min_files` or more is then built by splicing); a folder
    the walk listed from its record has one of its own."""
    record = cache.records.get(folder.path)
    misses = folder.files
    names = folder.names if folder.names is not None else [e.name for e in misses]
    work = Work(folder.path, "", len(names), folder.subdirs, None, record, stamp=folder.stamp,
                reused=folder.joined is not None and not folder.relisted, ignored=folder.ignored)
    joined = folder.joined if folder.joined is not None else join_names([*names, *folder.subdirs])
    if (not misses and record is not None and record.entry_names is None
            and len(record.entries) == ENTRY.size * len(names) and record.names == joined):
        work.joined = record.names    # the cache's own objects: nothing new held per file
        return work
    if delta is None and folder.joined is not None:
        # Listed from its record by the walk (walk._reuse): the record's own files, none gone,
        # none added, so a big one with a few changed files is spliced as watchman's are.
        delta = Delta(len(names), frozenset())
    if (delta is not None and record is not None and isinstance(record.tree_id, bytes)
            and len(names) >= splice_min_files and len(misses) <= DELTA_MAX_MISSES
            and (record.entry_names is not None
                 or len(record.entries) == ENTRY.size * delta.old_files)):
        work.joined = joined
        work.delta = delta
        pending: dict[int, Entry | None] = {}
        work.entries = pending
        for miss in misses:
            index = names.index(miss.name)
            pending[index] = None
            todo.append((work, index, miss))
        return work
    cached = record_entries(record) if record is not None and len(misses) < len(names) else {}
    entries = EntryList(len(names))
    next_miss = 0
    for index, name in enumerate(names):
        if next_miss < len(misses) and misses[next_miss].name == name:
            entries[index] = None
            todo.append((work, index, misses[next_miss]))
            next_miss += 1
        else:
            entries[index] = cached[name]
    work.joined = joined
    work.entries = entries
    return work


def carried_work(path: str, record: Record, records: dict[str, Record]) -> Work:
    """A folder taken whole from the cache (watchman saw no change in it, only below)."""
    prefix = path + "/" if path else ""
    names = split_names(record.names)
    nfiles = len(record.entries) // ENTRY.size
    return Work(path, record.names, nfiles, [n for n in names[nfiles:] if prefix + n in records],
                None, record, stamp=record.stamp, ignored=record.ignored)


def is_complete(path: str, records: dict[str, Record]) -> bool:
    """Whether a record can be carried: a known tree id, entries for its first names, and
    every other name a cached sub-folder (entries listed by name, as where a file was racy, or a
    dropped tree id, fail)."""
    record = records.get(path)
    if record is None or record.tree_id is False or record.entry_names is not None:
        return False
    prefix = path + "/" if path else ""
    names = split_names(record.names)
    for name in names[len(record.entries) // ENTRY.size:]:
        sub = records.get(prefix + name)
        if sub is None or sub.tree_id is False:
            return False
    return True


def split_record(path: str, record: Record, records: dict[str, Record]
                 ) -> tuple[list[str], list[str]]:
    """(files, sub-folders) of a record. Names hold files first, then sub-folders, and each
    sub-folder has a record of its own, so only the trailing names need a look-up (a record
    whose racy files were left out cannot count its files by its entries)."""
    prefix = path + "/" if path else ""
    names = split_names(record.names)
    start = len(record.entries) // ENTRY.size if record.entry_names is None else 0
    end = len(names)
    while end > start and prefix + names[end - 1] in records:
        end -= 1
    return list(names[:end]), list(names[end:])


def _file_ids(work: Work) -> list[tuple[int, bytes]]:
    """(git mode, blob id) of each of the folder's files, in order (what its tree lists)."""
    if isinstance(work.entries, EntryList):
        return packed_ids(work.entries.blob)
    if work.entries is not None:
        return [(e.git_mode, e.blob_id) for e in work.entries]  # type: ignore[union-attr]
    assert work.record is not None
    return packed_ids(work.record.entries)


def _new_record(work: Work, sha: bytes | None, start_ns: int) -> Record:
    stamp = None
    if work.stamp is not None:
        stamp = trusted_stamp(work.stamp, lambda mtime, ctime: racy_times(mtime, ctime, start_ns))
    stamp, ignored = listing_part(stamp, work.ignored)
    record = work.record
    if work.delta is not None:
        return _delta_record(work, sha, start_ns)._replace(stamp=stamp, ignored=ignored)
    if work.entries is None and record is not None:
        if record.tree_id == sha and record.stamp == stamp and record.ignored == ignored:
            return record
        return Record(sha, record.names, None, record.entries, stamp, ignored)
    entries: list[Entry] = work.entries  # type: ignore[assignment]
    racy = {i for i in work.fresh if entry_racy(entries[i], start_ns)}  # type: ignore[arg-type]
    if not racy:
        packed = (entries.packed() if isinstance(entries, EntryList)
                  else pack_entries(entries))
        return Record(sha, work.joined, None, packed, stamp, ignored)
    names = split_names(work.joined)[:work.nfiles]
    kept = [racy_kept(entries[i]) if i in racy else entries[i]  # type: ignore[arg-type]
            for i in range(work.nfiles)]
    return Record(sha, work.joined, join_names(names), pack_entries(kept), stamp, ignored)


def build_trees(works: list[Work], base: dict[str, Record], cache: StatCache, store: Store,
                writer: PackWriter, start_ns: int,
                max_inserts: int = DEFAULT_LIMITS.splice_max_inserts
                ) -> tuple[bytes, dict[str, Record]]:
    """Tree ids bottom-up (new trees go into the pack) and the cache's new records. `base`:
    records of folders not in `works`, still valid; they are part of the result.

    A folder with no file hashed, the names of the last snapshot and sub-folders that kept
    their tree ids keeps its cached tree id: a no-change snapshot encodes no tree at all."""
    previous = cache.records
    records = base
    for work in sorted(works, key=lambda w: w.path.count("/") if w.path else -1, reverse=True):
        path = work.path
        prefix = path + "/" if path else ""
        before = work.record
        subs = [(name, records[prefix + name].tree_id) for name in work.subdirs]
        if (before is not None and before.tree_id is not False and not work.hashed
                and before.names == work.joined
                and all(sha == _tree_of(previous.get(prefix + name)) for name, sha in subs)):
            records[path] = _new_record(work, before.tree_id, start_ns)
            continue
        if work.delta is not None:
            body = _spliced(work, subs, previous, store, max_inserts)
            if body == b"" and path:
                records[path] = _new_record(work, None, start_ns)   # nothing kept: no tree
                continue
            if body is not None:
                sha = hash_object(TREE, body)
                if (_tree_of(before) != sha) and sha not in writer and not store.has(sha):
                    writer.add(TREE, sha, body)
                records[path] = _new_record(work, sha, start_ns)
                continue
            _expand(work)
        # Encoded in one call (a name holds no NUL): a 40,000-file folder, 40,000 calls fewer.
        names = os.fsencode(work.joined).split(b"\0") if work.joined else []
        entries = [(mode, name, sha)
                   for name, (mode, sha) in zip(names, _file_ids(work), strict=False)]
        entries += [(MODE_TREE, os.fsencode(name), sha) for name, sha in subs if sha]
        if not entries and path:
            records[path] = _new_record(work, None, start_ns)
            continue
        body = encode_tree(entries)
        sha = hash_object(TREE, body)
        if (_tree_of(before) != sha) and sha not in writer and not store.has(sha):
            writer.add(TREE, sha, body)
        records[path] = _new_record(work, sha, start_ns)
    root = records[""].tree_id if "" in records else None
    return (root if isinstance(root, bytes) else EMPTY_TREE), records


def _expand(work: Work) -> None:
    """A delta work as an ordinary one: every file's entry, in the order of its names."""
    record, pending = work.record, work.entries
    assert record is not None and isinstance(pending, dict)
    cached = record_entries(record)
    full = [cached.get(name) for name in split_names(work.joined)[:work.nfiles]]
    for index, entry in pending.items():
        full[index] = entry
    work.entries = full
    work.delta = None


def _spliced(work: Work, subs: list[tuple[str, object]], previous: dict[str, Record],
             store: Store, max_inserts: int) -> bytes | None:
    """The folder's tree body from its old one (treepatch.py), or None (then re-encoded)."""
    record, delta, pending = work.record, work.delta, work.entries
    assert record is not None and delta is not None and isinstance(pending, dict)
    try:
        kind, body = store.read(record.tree_id)  # type: ignore[arg-type]
    except (UndostoreError, OSError):
        return None
    if kind != TREE:
        return None
    old_files = os.fsencode(record.names).split(b"\0")[:delta.old_files]
    new_names = os.fsencode(work.joined).split(b"\0")
    edits: list[tuple[tuple[bytes, bool] | None, TreeEntry | None]] = [
        ((os.fsencode(name), False), None) for name in delta.gone]
    kept = delta.old_files - len(delta.gone)
    for index, entry in pending.items():
        assert entry is not None
        name = new_names[index]
        old = (name, False) if index < kept else None
        edits.append((old, (entry.git_mode, name, entry.blob_id)))
    prefix = work.path + "/" if work.path else ""
    old_subs: list[bytes] = []
    for name, sha in subs:
        old_sha = _tree_of(previous.get(prefix + name))
        encoded = os.fsencode(name)
        if isinstance(old_sha, bytes):
            old_subs.append(encoded + b"/")
        if old_sha != sha and (old_sha or sha):
            edits.append(((encoded, True) if isinstance(old_sha, bytes) else None,
                          (MODE_TREE, encoded, sha) if isinstance(sha, bytes) else None))
    return patch_tree(body, edits, lambda: [*old_files, *old_subs], max_inserts)


def _delta_record(work: Work, sha: bytes | None, start_ns: int) -> Record:
    """The new record of a delta work: the old packed entries with those of gone and hashed
    files cut out, the hashed ones put in (in place, or after the others when the old record
    lists its entries' names apart); racy ones keep only their mode (`racy_kept`)."""
    record, delta, pending = work.record, work.delta, work.entries
    assert record is not None and delta is not None and isinstance(pending, dict)
    racy = {i for i in work.fresh if entry_racy(pending[i], start_ns)}  # type: ignore[arg-type]
    if record.entry_names is None and not racy:
        return Record(sha, work.joined, None, _in_place(record, delta, pending))
    if (not delta.gone and max(pending, default=-1) < delta.old_files
            and entries_follow_names(record)
            and len(record.entries) == ENTRY.size * delta.old_files):
        # The same files in the same order: entries replaced in place, and the names listed
        # apart only while an entry keeps only its mode (the walk then still compares the
        # folder's entries in order, not name by name). Names the record lists apart already
        # are those (one per entry, a prefix of its names): kept, not split and joined again.
        blob = _in_place(record, delta, {
            i: racy_kept(e) if i in racy else e for i, e in pending.items()})  # type: ignore[arg-type]
        apart = None
        if mode_only_indexes(blob):
            apart = (record.entry_names if record.entry_names is not None
                     else join_names(split_names(work.joined)[:delta.old_files]))
        return Record(sha, work.joined, apart, blob)
    size = ENTRY.size
    keys = list(split_names(record.entry_names) if record.entry_names is not None
                else split_names(record.names)[:delta.old_files])
    names = split_names(work.joined)
    drop = set(delta.gone).union(names[i] for i in pending)
    cut = sorted(i for i in (_position(keys, name) for name in drop) if i is not None)
    blob = record.entries
    parts, start = [], 0
    for index in cut:
        parts.append(blob[start * size:index * size])
        start = index + 1
    parts.append(blob[start * size:])
    for index in cut[::-1]:
        del keys[index]
    for index in sorted(pending):
        entry = pending[index]
        parts.append(ENTRY.pack(*(racy_kept(entry) if index in racy else entry)))  # type: ignore[arg-type, misc]
        keys.append(names[index])
    return Record(sha, work.joined, join_names(keys), b"".join(parts))


def _in_place(record: Record, delta: Delta, pending: dict[int, Entry | None]) -> bytes:
    """A complete record's packed entries with gone ones cut out and hashed ones put in their
    place (a new name at the end, as the names list it)."""
    size = ENTRY.size
    blob = record.entries
    if delta.gone:
        old_names = split_names(record.names)[:delta.old_files]
        parts, start = [], 0
        for index in sorted(old_names.index(name) for name in delta.gone):
            parts.append(blob[start * size:index * size])
            start = index + 1
        parts.append(blob[start * size:])
        blob = b"".join(parts)
    entries = bytearray(blob)
    kept = delta.old_files - len(delta.gone)
    for index in sorted(pending):
        packed = ENTRY.pack(*pending[index])  # type: ignore[misc]
        if index < kept:
            entries[index * size:(index + 1) * size] = packed
        else:
            entries += packed
    return bytes(entries)


def _position(names: list[str], name: str) -> int | None:
    try:
        return names.index(name)
    except ValueError:
        return None


def _tree_of(record: Record | None) -> object:
    """A record's tree id, or a value no tree id equals when it has none to offer."""
    if record is None or record.tree_id is False:
        return 0
    return record.tree_id


def count_files(records: dict[str, Record], before: dict[str, Record], count: int) -> int:
    """Files in a snapshot from its records: `count` (the files of `before`, or -1 when not
    known) corrected by the folders whose records changed, else every folder counted."""
    if count < 0:
        return sum(_files_in(path, records) for path in records)
    changed = {path for path, record in records.items() if before.get(path) is not record}
    changed.update(before.keys() - records.keys())
    return (count - sum(_files_in(path, before) for path in changed)
            + sum(_files_in(path, records) for path in changed))


def _files_in(path: str, records: dict[str, Record]) -> int:
    """Files directly in a folder: its names less its sub-folders, which come last."""
    record = records.get(path)
    if record is None or not record.names:
        return 0
    prefix = path + "/" if path else ""
    names = record.names.split("\0")
    end = len(names)
    while end and prefix + names[end - 1] in records:
        end -= 1
    return end
