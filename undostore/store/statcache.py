"""The stat cache: path -> (stat fingerprint, mode, blob id), so unchanged files are never re-read.

A cached entry is trusted only when the file's fingerprint (mtime, ctime, size, inode, mode bits)
is unchanged *and* the entry was not racy when saved. Racy means the file was modified so close to
the snapshot's start that a later write in the same clock tick could leave its stat unchanged
(git's "racy git" problem): such entries are dropped at save time, so the file is hashed again next
time. The window is 50 ms for file systems with sub-second timestamps and 3 s for those with whole
seconds (FAT keeps 2 s), which also covers the kernel's coarse clock lagging `time.time_ns()`.

The file is framed with an xxhash checksum; a torn, corrupt or foreign cache is discarded and the
snapshot simply hashes everything (correct, only slower).
"""

from __future__ import annotations

import marshal
import os
import sys

from undostore.platform import IS_WINDOWS
from undostore.store.atomic import CorruptFrame, quarantine, read_framed, write_framed

_KIND = b"STAT"
_VERSION = (4, marshal.version, sys.implementation.cache_tag)
FINE_MARGIN_NS = 50_000_000
COARSE_MARGIN_NS = 3_000_000_000


# (mtime_ns, ctime_ns, size, inode, st_mode, git mode, raw blob id)
Entry = tuple[int, int, int, int, int, int, bytes]
Fingerprint = tuple[int, int, int, int, int]
# A folder's tree id (None: no kept file below it) and the names it held, in walk order.
FolderState = tuple["bytes | None", tuple[str, ...]]


def fingerprint(st: os.stat_result) -> Fingerprint:
    """What must be unchanged for a cached blob id to be trusted. Windows' scandir reports
    inode 0 (and os.stat a real one), so inodes are left out there."""
    return (st.st_mtime_ns, st.st_ctime_ns, st.st_size, 0 if IS_WINDOWS else st.st_ino,
            st.st_mode)


def make_entry(st: os.stat_result, git_mode: int, sha: bytes) -> Entry:
    return (*fingerprint(st), git_mode, sha)


def mode_only_entry(git_mode: int, sha: bytes) -> Entry:
    """An entry whose fingerprint matches no stat: only its mode counts (Windows, where the
    disk has no exec bit, takes the mode from here); the file itself is hashed again."""
    return (0, 0, -1, 0, 0, git_mode, sha)


def is_racy(st: os.stat_result, start_ns: int) -> bool:
    """Whether a file's stat is too close to `start_ns` to prove a later change would show."""
    return _racy(st.st_mtime_ns, st.st_ctime_ns, start_ns)


def _racy(mtime_ns: int, ctime_ns: int, start_ns: int) -> bool:
    coarse = mtime_ns % 1_000_000_000 == 0   # whole seconds: a coarse file system (FAT: 2 s)
    margin = COARSE_MARGIN_NS if coarse else FINE_MARGIN_NS
    return max(mtime_ns, ctime_ns) >= start_ns - margin


class StatCache:
    """Loaded once per snapshot; a new one is saved after the snapshot's pack is committed."""

    def __init__(self, files: dict[str, Entry] | None = None,
                 folders: dict[str, FolderState] | None = None, identity: str = "") -> None:
        self.files: dict[str, Entry] = files or {}
        self.folders: dict[str, FolderState] = folders or {}
        self.identity = identity   # the store this cache belongs to
        # The packs that held every object the cache vouches for when it was saved: if one of
        # them is gone (deleted by hand, a store restored from backup), the cache is not trusted.
        self.packs: tuple[str, ...] = ()

    @property
    def root(self) -> bytes | None:
        """The root tree of the last save: every object the cache vouches for is below it."""
        state = self.folders.get("")
        return state[0] if state is not None else None

    @classmethod
    def load(cls, path: str, store_identity: str = "", on_warning=None,  # noqa: ANN001
             ) -> StatCache:
        """The cache at `path`, or an empty one if it is missing, damaged, written by another
        format or Python, or bound to another store (its blob ids would mean nothing here)."""
        empty = cls(identity=store_identity)
        try:
            payload = read_framed(path, _KIND)
        except CorruptFrame:
            quarantine(path)
            if on_warning:
                on_warning(path, "stat cache was damaged; discarded (all files are hashed again)")
            return empty
        except OSError:
            if os.path.isdir(path):  # Windows says "access denied" where POSIX says EISDIR
                quarantine(path)  # something else sits where the cache goes: move it aside
            return empty
        if payload is None:
            return empty
        try:
            version, identity, packs, files, folders = marshal.loads(payload)
        except (ValueError, EOFError, TypeError):
            return empty
        if (version != _VERSION or identity != store_identity or not isinstance(files, dict)
                or not isinstance(folders, dict)):
            return empty
        cache = cls(files, folders, store_identity)
        cache.packs = tuple(packs)
        return cache

    def trusted_with(self, present_packs: set[str]) -> bool:
        """Whether every pack this cache relied on is still in the store."""
        return set(self.packs) <= present_packs

    def lookup(self, path: str, st: os.stat_result) -> Entry | None:
        entry = self.files.get(path)
        if entry is not None and entry[:5] == fingerprint(st):
            return entry
        return None

    def previous_mode(self, path: str) -> int | None:
        entry = self.files.get(path)
        return entry[5] if entry is not None else None

    def save(self, path: str, files: dict[str, Entry], folders: dict[str, FolderState],
             start_ns: int, fresh: set[str] | None = None) -> None:
        """Write the new cache, leaving out racy entries (see the module docstring).

        Folder states need no such care: a folder's cached tree id is reused only when every
        file in it was a cache hit, and a racy file never is."""
        if fresh is None:
            kept = {p: e for p, e in files.items() if not _entry_racy(e, start_ns)}
        else:
            # Entries carried over from the loaded cache passed this test when it was saved;
            # only the ones hashed in this run (`fresh`) can be racy.
            racy = {p for p in fresh if _entry_racy(files[p], start_ns)}
            kept = {p: e for p, e in files.items() if p not in racy} if racy else files
        payload = marshal.dumps((_VERSION, self.identity, self.packs, kept, folders))
        # Not fsynced: losing the cache in a crash only costs a rehash, never correctness.
        write_framed(path, _KIND, payload, durable=False)


def _entry_racy(entry: Entry, start_ns: int) -> bool:
    return _racy(entry[0], entry[1], start_ns)


def rebind_packs(path: str, store_identity: str, packs: set[str]) -> None:
    """After gc moved every object the cache vouches for into `packs`, say so in the cache
    (gc keeps those objects, so the cache stays valid; only its pack list is out of date)."""
    cache = StatCache.load(path, store_identity)
    if not cache.files and not cache.folders:
        return
    cache.packs = tuple(sorted(packs))
    cache.save(path, cache.files, cache.folders, start_ns=0, fresh=set())
