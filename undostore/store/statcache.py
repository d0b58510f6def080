"""The stat cache: per folder, its tree id, its names, and each file's (stat fingerprint, mode,
blob id), so unchanged files are never re-read and unchanged folders never re-encoded.

A cached entry is trusted only when the file's fingerprint (mtime, ctime, size, inode, mode bits)
is unchanged *and* the entry was not racy when saved. Racy means the file was modified so close to
the snapshot's start that a later write in the same clock tick could leave its stat unchanged
(git's "racy git" problem): such entries are dropped at save time, so the file is hashed again next
time. The window is 50 ms for file systems with sub-second timestamps and 3 s for those with whole
seconds (FAT keeps 2 s), which also covers the kernel's coarse clock lagging `time.time_ns()`.

Format (lean on purpose: a 100,000-file cache loads as ~20,000 objects, not ~800,000): one
`Record` per folder: its tree id, names, entry names and entries, then its listing's stamp and
ignored names. The tree id is None for a folder with no kept file and False when a restore
changed something in or below the folder (the next snapshot re-encodes it from its entries).
`names` are the folder's names NUL-joined, files first then sub-folders (each of which has a
record), as the walk found them; `entry_names` is None when the entries are those of the first
files of `names` in order, else the NUL-joined names they belong to: a file of `names` missing
there has no entry (racy, or not written as a restore planned), and a name there missing from
`names` is a file a restore created (kept only if the next snapshot finds it and its ignore
rules keep it); `entries` packs each `Entry` as `ENTRY` (60 bytes). Entries are decoded one
folder at a time, when that folder is looked at. `stamp` is the folder's stamp
(`walk.folder_stamp`) from when its listing was read: a walk keeps the listing of a folder
whose stamp still holds (git's untracked cache). Records made without one (a restore's) have
None, and their folders are read again. `ignored`, only beside a stamp, is the names that
listing found ignored (NUL-joined, a folder's with a trailing '/'), read under the rules the
stamp vouches for: while those rules hold, a folder listed again after its stat moved (a build
rewrote its ignored outputs, a restore wrote in it) takes them as ignored without matching them
again (git's untracked cache keeps the same). A record is saved as the plain tuple it is
(marshal takes no subclass) and loaded back as a `Record` (one object per folder).

A restore that records its writes leaves the root with no tree id, so no snapshot's mode record
(store/moderecord.py) describes the files: it saves the one that does, encoded, as `modes`
(None otherwise); so does a snapshot whose record could not be saved. The next snapshot starts
its own record from it.

On disk: a head (`marshal` of version, store identity, packs, watchman state, file count and,
when set, `modes`; a head without it reads as None) and
the records in parts of `Limits.cache_part_folders` folders, each a `marshal`ed dict behind its
length, so a save never holds the whole file in memory. The file is framed with an xxhash
checksum; a torn, corrupt or foreign cache is discarded and the snapshot simply hashes
everything (correct, only slower).
"""

from __future__ import annotations

import itertools
import marshal
import os
import struct
import sys
from collections.abc import Iterable, Iterator
from typing import NamedTuple, TypeVar

from undostore.limits import DEFAULT_LIMITS
from undostore.platform import IS_WINDOWS
from undostore.store.framing import (
    CorruptFrame,
    quarantine,
    read_framed,
    read_framed_view,
    write_framed,
    write_framed_parts,
)

_KIND = b"STAT"
_DELTA_KIND = b"STAD"
DELTA_SUFFIX = ".delta"
DELTA_MIN = 64          # folders a delta may hold, at least ...
DELTA_SHARE = 16        # ... or this share of all folders
_VERSION = (9, marshal.version, sys.implementation.cache_tag)
_LENGTH = struct.Struct("<I")
FINE_MARGIN_NS = 50_000_000
COARSE_MARGIN_NS = 3_000_000_000


# What must be unchanged for a cached blob id to be trusted (`fingerprint`).
Fingerprint = tuple[int, int, int, int, int]   # mtime_ns, ctime_ns, size, inode, st_mode


class Entry(NamedTuple):
    """One file's cached entry: its stat fingerprint, git mode and blob id (packed on disk as
    `ENTRY`, in that order)."""

    mtime_ns: int
    ctime_ns: int
    size: int
    inode: int
    st_mode: int
    git_mode: int
    blob_id: bytes

    @property
    def fingerprint(self) -> Fingerprint:
        return (self.mtime_ns, self.ctime_ns, self.size, self.inode, self.st_mode)


class FolderState(NamedTuple):
    """A folder's tree id (None: no kept file below it) and the names it held, in walk order."""

    tree_id: bytes | None
    names: tuple[str, ...]


class Record(NamedTuple):
    """One folder's record (module docstring). Saved as the plain tuple it is (marshal takes
    no subclass); one made elsewhere (a restore's) has no stamp."""

    tree_id: bytes | None | bool     # None: no kept file below; False: dropped by a restore
    names: str                       # files first, then sub-folders, NUL-joined
    entry_names: str | None          # None: the entries are those of the first names
    entries: bytes                   # each packed as ENTRY
    stamp: bytes | None = None       # walk.folder_stamp when its listing was read
    ignored: str | None = None       # beside a stamp: the names that listing found ignored


def listing_part(stamp: bytes | None, ignored: str | None) -> tuple[bytes | None, str | None]:
    """A record's (stamp, ignored) as it keeps them: ignored names only beside a stamp, and
    None rather than none."""
    if stamp is None:
        return None, None
    return stamp, ignored or None

# A file's `fingerprint` packed (mtime, ctime, size, inode, st_mode): the first bytes of each
# ENTRY, and each part of a folder stamp (walk.py compares them in place).
FINGERPRINT = struct.Struct("<qqqQI")
ENTRY_TAIL = struct.Struct("<I20s")   # what follows it in an ENTRY: git mode, blob id
ENTRY = struct.Struct(FINGERPRINT.format + ENTRY_TAIL.format[1:])
# Views of one packed FINGERPRINT (or an ENTRY, which starts with one), and of packed ENTRYs:
# a field read without decoding the rest.
_TIMES = struct.Struct(FINGERPRINT.format[:3])                           # mtime, ctime
_ST_MODE = struct.Struct(f"<{FINGERPRINT.size - 4}xI")                   # st_mode
_MODE_ONLY = struct.Struct(f"<{FINGERPRINT.size - 4}xI{ENTRY_TAIL.size}x")  # st_mode, by entry
_IDS = struct.Struct(f"<{FINGERPRINT.size}x{ENTRY_TAIL.format[1:]}")     # git mode, blob id
_BLOB_AT = ENTRY.size - 20                                               # the blob id's offset
_SEP = "\0"


class HeldIds(NamedTuple):
    """The tree and blob ids a stat cache holds (`StatCache.held_ids`)."""

    trees: set[bytes]
    blobs: set[bytes]


def _is_id(value: object) -> bool:
    return isinstance(value, bytes) and len(value) == 20


def fingerprint(st: os.stat_result) -> Fingerprint:
    """What must be unchanged for a cached blob id to be trusted. Windows' scandir reports
    inode 0 (and os.stat a real one), so inodes are left out there."""
    return (st.st_mtime_ns, st.st_ctime_ns, st.st_size, 0 if IS_WINDOWS else st.st_ino,
            st.st_mode)


def make_entry(st: os.stat_result, git_mode: int, sha: bytes) -> Entry:
    return Entry(*fingerprint(st), git_mode, sha)


def unpack_entry(packed: bytes | bytearray | memoryview, offset: int = 0) -> Entry:
    """The entry packed (`ENTRY`) at `offset` of `packed`."""
    return Entry._make(ENTRY.unpack_from(packed, offset))


def packed_st_mode(packed: bytes) -> int:
    """The st_mode of a packed fingerprint (or entry)."""
    return _ST_MODE.unpack_from(packed)[0]


def packed_times(packed: bytes) -> tuple[int, int]:
    """(mtime_ns, ctime_ns) of a packed fingerprint (or entry)."""
    return _TIMES.unpack_from(packed)


def packed_blob_id(packed: bytes) -> bytes:
    """The blob id of one packed entry."""
    return packed[_BLOB_AT:]


def packed_ids(blob: bytes | bytearray) -> list[tuple[int, bytes]]:
    """(git mode, blob id) of each entry packed in `blob`, in order; fingerprints skipped."""
    return list(_IDS.iter_unpack(blob))


MODE_ONLY_SIZE = -1   # the size of an entry that keeps only a mode: no stat has it


def mode_only_entry(git_mode: int, sha: bytes) -> Entry:
    """An entry whose fingerprint matches no stat: only its mode counts (Windows, where the
    disk has no exec bit, takes the mode from here); the file itself is hashed again."""
    return Entry(0, 0, MODE_ONLY_SIZE, 0, 0, git_mode, sha)


_MODE_ONLY_PRINT = FINGERPRINT.pack(0, 0, MODE_ONLY_SIZE, 0, 0)


def mode_only_indexes(entries: bytes) -> list[int]:
    """Indexes of the entries in packed `entries` that keep only a mode (`mode_only_entry`),
    found by a search of the bytes: a folder of 40,000 files is not unpacked entry by entry."""
    found: list[int] = []
    at = entries.find(_MODE_ONLY_PRINT)
    while at >= 0:
        index, misaligned = divmod(at, ENTRY.size)
        if not misaligned:
            found.append(index)
        at = entries.find(_MODE_ONLY_PRINT, at + 1)
    return found


def racy_kept(entry: Entry) -> Entry:
    """What the cache keeps of a racy file's entry: its mode and blob id only, so the next
    snapshot hashes the file again yet still knows the mode (on Windows the disk has no exec
    bit, and a link written as a file stays one: hashing._git_mode)."""
    return mode_only_entry(entry.git_mode, entry.blob_id)


def racy_times(mtime_ns: int, ctime_ns: int, start_ns: int) -> bool:
    """Whether times this close to `start_ns` prove nothing (for files and folders alike)."""
    return _racy(mtime_ns, ctime_ns, start_ns)


def coarse_times(mtime_ns: int, ctime_ns: int) -> bool:
    """Whether these times come from a file system that keeps whole seconds (FAT: 2 s), whose
    times may not move at all within a second. On POSIX the change time decides: every write,
    add, remove or rename sets it to the clock's time, while an mtime on a whole second is as
    likely set by `tar` or `cp -p` on a fine-grained file system. On Windows the change time is
    the creation time: the mtime decides."""
    if mtime_ns % 1_000_000_000:
        return False
    return IS_WINDOWS or ctime_ns % 1_000_000_000 == 0


def _racy(mtime_ns: int, ctime_ns: int, start_ns: int) -> bool:
    margin = COARSE_MARGIN_NS if coarse_times(mtime_ns, ctime_ns) else FINE_MARGIN_NS
    return max(mtime_ns, ctime_ns) >= start_ns - margin


def entry_racy(entry: Entry, start_ns: int) -> bool:
    return _racy(entry.mtime_ns, entry.ctime_ns, start_ns)


def split_names(joined: str) -> tuple[str, ...]:
    return tuple(joined.split(_SEP)) if joined else ()


def join_names(names: tuple[str, ...] | list[str]) -> str:
    return _SEP.join(names)


def entries_follow_names(record: Record) -> bool:
    """Whether a record's packed entries are those of its first names, in their order: its
    names not listed apart, or listed apart only because some entries keep only a mode (the
    same names, the same order: a prefix of its names)."""
    apart, names = record.entry_names, record.names
    if apart is None:
        return True
    end = len(apart)
    return end > 0 and names.startswith(apart) and names[end:end + 1] in ("", _SEP)


def pack_entries(entries: list[Entry]) -> bytes:
    pack = ENTRY.pack
    return b"".join([pack(*e) for e in entries])


def record_entries(record: Record) -> dict[str, Entry]:
    """A record's entries by file name."""
    blob = record.entries
    return _by_name(record, map(Entry._make, ENTRY.iter_unpack(blob))) if blob else {}


def unusual_modes(record: Record, usual: frozenset[int]) -> list[tuple[str, int]]:
    """(name, st_mode) of a record's entries whose st_mode is not in `usual`, the modes read
    straight from the packed entries (a folder of usual ones decodes nothing else)."""
    blob = record.entries
    if not blob:
        return []
    modes = [mode for (mode,) in _MODE_ONLY.iter_unpack(blob)]
    if usual.issuperset(modes):
        return []
    return [(name, mode) for name, mode in _by_name(record, modes).items() if mode not in usual]


def packed_entries(record: Record) -> dict[str, bytes]:
    """A record's entries by file name, each left packed (`ENTRY`; a decoded one costs ~3x
    the memory)."""
    blob, size = record.entries, ENTRY.size
    if not blob:
        return {}
    return _by_name(record, (blob[at:at + size] for at in range(0, len(blob), size)))


_V = TypeVar("_V")


def _by_name(record: Record, entries: Iterable[_V]) -> dict[str, _V]:
    """`entries` (one per entry of `record`, in its order) by the names they belong to."""
    if record.entry_names is None:
        return dict(zip(record.names.split(_SEP), entries, strict=False))  # files come first
    return dict(zip(record.entry_names.split(_SEP), entries, strict=True))


DECODED_FOLDERS = 16   # folders `StatCache.entries_in` keeps decoded


class StatCache:
    """Loaded once per snapshot; a new one is saved after the snapshot's pack is committed."""

    def __init__(self, files: dict[str, Entry] | None = None,
                 folders: dict[str, FolderState] | None = None, identity: str = "") -> None:
        self.records: dict[str, Record] = (
            _records_from(files or {}, folders or {}, None) if files or folders else {})
        self.identity = identity   # the store this cache belongs to
        # The packs that held every object the cache vouches for when it was saved: if one of
        # them is gone (deleted by hand, a store restored from backup), the cache is not trusted.
        self.packs: tuple[str, ...] = ()
        # Watchman's (token, ignore fingerprint) when this picture was taken (changes.py).
        self.fsmonitor: tuple | None = None
        self._entries: dict[str, dict[str, Entry]] = {}   # decoded folders, for `lookup`
        self.count = -1     # files in the snapshot that saved the records (-1: unknown)
        self.modes: bytes | None = None   # the files' mode record where no saved one is (above)
        self._base: int | None = None      # digest of the base file's payload, when loaded
        self._delta: dict[str, Record | None] = {}   # records changed since the base

    @property
    def root(self) -> bytes | None:
        """The root tree of the last save: every object the cache vouches for is below it."""
        record = self.records.get("")
        tree = record.tree_id if record is not None else None
        return tree if isinstance(tree, bytes) else None

    @property
    def files(self) -> dict[str, Entry]:
        """Every entry by path (decodes the whole cache: for restore and gc, not snapshots)."""
        out: dict[str, Entry] = {}
        for folder, record in self.records.items():
            prefix = folder + "/" if folder else ""
            for name, entry in record_entries(record).items():
                out[prefix + name] = entry
        return out

    @property
    def folders(self) -> dict[str, FolderState]:
        """Every folder's (tree id, names) where the tree id is known."""
        return {path: FolderState(r.tree_id, split_names(r.names))  # type: ignore[arg-type]
                for path, r in self.records.items() if r.tree_id is not False}

    def held_ids(self) -> HeldIds:
        """The ids the cache vouches for, the files now (gc keeps them, usage counts them):
        each folder's tree and each file's blob. A hint file: a value not shaped like an id is
        skipped, never an error."""
        return HeldIds({state.tree_id for state in self.folders.values()
                        if _is_id(state.tree_id)},
                       {entry.blob_id for entry in self.files.values() if _is_id(entry.blob_id)})

    @classmethod
    def load(cls, path: str, store_identity: str = "", on_warning=None,  # noqa: ANN001
             ) -> StatCache:
        """The cache at `path`, or an empty one if it is missing, damaged, written by another
        format or Python, or bound to another store (its blob ids would mean nothing here).
        A delta saved beside it (`path` + DELTA_SUFFIX) applies when it names this base."""
        global _last_loaded
        _last_loaded = (path, store_identity)
        kept = _preloaded
        if (kept is not None and kept.path == path and kept.identity == store_identity
                and _files_of(path) == kept.files):
            return kept.cache.copy()
        empty = cls(identity=store_identity)
        try:
            found = read_framed_view(path, _KIND)
        except CorruptFrame:
            quarantine(path)
            if on_warning:
                on_warning(path, "stat cache was damaged; discarded (all files are hashed again)")
            return empty
        except OSError:
            if os.path.isdir(path):  # Windows says "access denied" where POSIX says EISDIR
                quarantine(path)  # something else sits where the cache goes: move it aside
            return empty
        if found is None:
            return empty
        payload, digest = found
        try:
            head, records = _decode(payload)
        except (ValueError, EOFError, TypeError, struct.error):
            return empty
        version, identity, *state = head
        if version != _VERSION or identity != store_identity:
            return empty
        cache = cls(identity=store_identity)
        cache.records = records
        cache._base = digest   # names this base: a delta made for another one is ignored
        cache._apply_delta(path + DELTA_SUFFIX, state)
        return cache

    def _apply_delta(self, path: str, state: list) -> None:
        """Records changed since the base was written; a delta that is missing, damaged or
        made for another base is ignored (the base is an older, still consistent picture)."""
        try:
            payload = read_framed(path, _DELTA_KIND)
            delta = marshal.loads(payload) if payload is not None else None
        except (OSError, CorruptFrame, ValueError, EOFError, TypeError):
            delta = None
        if (isinstance(delta, tuple) and len(delta) in (6, 7) and delta[0] == _VERSION
                and delta[1] == self._base and isinstance(delta[-1], dict)):
            *state, saved = delta[2:]
            try:
                changes = _as_records(saved, deleted=True)
            except (ValueError, TypeError):
                changes = {}
            self._delta = changes
            for folder, record in changes.items():
                if record is None:
                    self.records.pop(folder, None)
                else:
                    self.records[folder] = record
        packs, fsmonitor, count, *modes = state
        self.packs = tuple(packs)
        self.fsmonitor = fsmonitor if isinstance(fsmonitor, tuple) else None
        self.count = count if isinstance(count, int) else -1
        self.modes = modes[0] if modes and isinstance(modes[0], bytes) else None

    def copy(self) -> StatCache:
        """A cache of its own with the same records (which are never changed in place)."""
        other = StatCache(identity=self.identity)
        other.records = dict(self.records)
        other.packs, other.fsmonitor, other.count = self.packs, self.fsmonitor, self.count
        other.modes, other._base, other._delta = self.modes, self._base, dict(self._delta)
        return other

    def trusted_with(self, present_packs: set[str]) -> bool:
        """Whether every pack this cache relied on is still in the store."""
        return set(self.packs) <= present_packs

    def entries_in(self, folder: str) -> dict[str, Entry]:
        """The cached entries of the files directly in `folder`, by name. The folders decoded
        last are kept (`DECODED_FOLDERS`), not all: look-ups come folder by folder, and every
        folder kept decoded costs ~9 objects a file (7 MB for a restore of 2,000 files that
        looked into 900 folders)."""
        decoded = self._entries.pop(folder, None)
        if decoded is None:
            record = self.records.get(folder)
            decoded = record_entries(record) if record else {}
            if len(self._entries) >= DECODED_FOLDERS:
                del self._entries[next(iter(self._entries))]
        self._entries[folder] = decoded   # (re)inserted last: the most recently used
        return decoded

    def lookup(self, path: str, st: os.stat_result) -> Entry | None:
        folder, _, name = path.rpartition("/")
        entry = self.entries_in(folder).get(name)
        if entry is not None and entry.fingerprint == fingerprint(st):
            return entry
        return None

    def previous_mode(self, path: str) -> int | None:
        folder, _, name = path.rpartition("/")
        entry = self.entries_in(folder).get(name)
        return entry.git_mode if entry is not None else None

    def save(self, path: str, files: dict[str, Entry], folders: dict[str, FolderState],
             start_ns: int, fresh: set[str] | None = None) -> None:
        """Write a cache from entries by path and folder states, racy entries with only their
        mode (`racy_kept`).

        Folder states need no such care: a folder's cached tree id is reused only when every
        file in it was a cache hit, and a racy file never is."""
        if fresh is None:
            racy = {p for p, e in files.items() if entry_racy(e, start_ns)}
        else:
            # Entries carried over from the loaded cache passed this test when it was saved;
            # only the ones hashed in this run (`fresh`) can be racy.
            racy = {p for p in fresh if entry_racy(files[p], start_ns)}
        self.save_records(path, _records_from(files, folders, racy))

    def save_records(self, path: str, records: dict[str, Record], count: int = -1,
                     part_folders: int = DEFAULT_LIMITS.cache_part_folders) -> None:
        """Save `records`: as a small delta beside the base when few folders changed since the
        base was written (a one-file change in a big tree then writes kilobytes, not
        megabytes), else as a new base."""
        old = self.records
        delta = dict(self._delta)
        for folder, record in records.items():
            if old.get(folder) is not record:
                delta[folder] = record
        for folder in old.keys() - records.keys():
            delta[folder] = None
        # Not fsynced: losing the cache in a crash only costs a rehash, never correctness.
        if self._base is not None and len(delta) <= max(DELTA_MIN, len(records) // DELTA_SHARE):
            saved = {folder: None if r is None else tuple(r) for folder, r in delta.items()}
            payload = marshal.dumps((_VERSION, self._base, *self._state(count), saved))
            write_framed(path + DELTA_SUFFIX, _DELTA_KIND, payload, durable=False)
            self._delta = delta
        else:
            head = (_VERSION, self.identity, *self._state(count))
            self._base = write_framed_parts(path, _KIND, _encode(head, records, part_folders),
                                            durable=False)
            self._delta = {}
            try:
                os.unlink(path + DELTA_SUFFIX)
            except OSError:
                pass  # a delta left behind names the old base: it is ignored
        self.records = records
        self.count = count
        self._entries = {}

    def _state(self, count: int) -> tuple:
        """What a head (or a delta) holds besides version and identity."""
        state = (self.packs, self.fsmonitor, count)
        return state if self.modes is None else (*state, self.modes)


class _Preloaded(NamedTuple):
    path: str
    identity: str
    files: tuple    # `_files_of(path)` when it was read
    cache: StatCache


_preloaded: _Preloaded | None = None
_last_loaded: tuple[str, str] | None = None


def preload(path: str, store_identity: str) -> bool:
    """Read the cache at `path` now and keep it in this process: a later `load` of the same
    files, unchanged since (the base's and the delta's device, inode, size and time), here or in
    a process forked from this one, takes a copy without reading them. For the resident process
    (cli/resident_serve.py), whose children each load the cache their call's store has; one is
    kept, the last preloaded. Returns whether one is kept."""
    global _preloaded
    _preloaded = None
    files = _files_of(path)
    cache = StatCache.load(path, store_identity)
    if cache._base is None or _files_of(path) != files:
        return False   # none there, damaged, or rewritten while it was read
    _preloaded = _Preloaded(path, store_identity, files, cache)
    return True


def last_loaded() -> tuple[str, str] | None:
    """(path, store identity) of the last cache `load` was asked for in this process."""
    return _last_loaded


def _files_of(path: str) -> tuple:
    found = []
    for name in (path, path + DELTA_SUFFIX):
        try:
            st = os.stat(name)
        except OSError:
            found.append(None)
            continue
        found.append((st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns))
    return tuple(found)


def _encode(head: tuple, records: dict[str, Record], part_folders: int) -> Iterator[bytes]:
    """The saved file's payload in parts: the head, then the records `part_folders` at a
    time, each behind its length."""
    for chunk in itertools.chain((marshal.dumps(head),), _record_parts(records, part_folders)):
        yield _LENGTH.pack(len(chunk))   # one part at a time: the parts are never all held
        yield chunk


def _record_parts(records: dict[str, Record], part_folders: int) -> Iterator[bytes]:
    part: dict[str, Record] = {}
    for folder, record in records.items():
        part[folder] = tuple(record)   # marshal saves plain tuples only
        if len(part) >= part_folders:
            yield marshal.dumps(part)
            part = {}
    if part:
        yield marshal.dumps(part)


def _decode(payload: memoryview) -> tuple[tuple, dict[str, Record]]:
    """(head, records) from `_encode`'s payload; ValueError if it is not one."""
    head: object = None
    records: dict[str, Record] = {}
    offset = 0
    while offset < len(payload):
        (length,) = _LENGTH.unpack_from(payload, offset)
        offset += _LENGTH.size
        if offset + length > len(payload):
            raise ValueError("truncated part")
        chunk = marshal.loads(payload[offset:offset + length])
        offset += length
        if head is None:
            head = chunk
        elif isinstance(chunk, dict):
            records.update(_as_records(chunk))
        else:
            raise ValueError("a part is not a dict")
    if not isinstance(head, tuple) or len(head) not in (5, 6):
        raise ValueError("no head")
    return head, records


def _as_records(saved: dict, deleted: bool = False) -> dict:
    """Saved records (plain tuples) as `Record`s; ValueError if one is not shaped as one.
    `deleted`: a delta's, where None stands for a folder gone. A record saved without its
    listing's part (a restore's, before records were named) gets None there."""
    make = tuple.__new__
    size = len(Record._fields)
    out = {}
    for folder, saved_record in saved.items():
        if saved_record is None and deleted:
            out[folder] = None
        elif type(saved_record) is tuple and len(saved_record) == size:
            out[folder] = make(Record, saved_record)
        elif type(saved_record) is tuple and _SHORTEST <= len(saved_record) < size:
            out[folder] = make(Record, saved_record + (None,) * (size - len(saved_record)))
        else:
            raise ValueError("not a stat cache record")
    return out


_SHORTEST = 4   # tree id, names, entry names, entries


def _records_from(files: dict[str, Entry], folders: dict[str, FolderState],
                  racy: set[str] | None) -> dict[str, Record]:
    """Records from entries by path and folder states (the format's general case)."""
    by_folder: dict[str, dict[str, Entry]] = {}
    apart: set[str] = set()   # folders with a racy file: entries listed by name (capture.py)
    for path, entry in files.items():
        folder, _, name = path.rpartition("/")
        if racy and path in racy:
            entry = racy_kept(entry)
            apart.add(folder)
        by_folder.setdefault(folder, {})[name] = entry
    records: dict[str, Record] = {}
    for folder in {*folders, *by_folder}:
        state = folders.get(folder)
        mine = by_folder.get(folder, {})
        names = state.names if state is not None else tuple(mine)
        leading = names[:len(mine)]
        if folder not in apart and set(leading) == mine.keys():
            entry_names = None
            ordered = [mine[n] for n in leading]
        else:
            entry_names = join_names(list(mine))
            ordered = list(mine.values())
        records[folder] = Record(state.tree_id if state is not None else False,
                                 join_names(names), entry_names, pack_entries(ordered))
    return records


def rebind_packs(path: str, store_identity: str, packs: set[str]) -> None:
    """After gc moved every object the cache vouches for into `packs`, say so in the cache
    (gc keeps those objects, so the cache stays valid; only its pack list is out of date)."""
    cache = StatCache.load(path, store_identity)
    if not cache.records:
        return
    cache.packs = tuple(sorted(packs))
    cache.save_records(path, cache.records, cache.count)
