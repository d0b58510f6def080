"""Permission bits and owners of a snapshot, kept beside its tree (git's tree format holds only
100644 / 100755 / 120000, so a 0600 key or a 0700 `secrets/` folder would come back wider).

One record per snapshot id, `<store>/modes/<tree id hex>`, framed with an xxhash checksum: the
umask and the owner that count as default, and only the files and folders that differ from that
default (a file's default is 0666 & ~umask, or 0777 & ~umask for an executable; a folder's
0777 & ~umask). Written by the snapshot, read by restore for what it re-creates. A record that is
missing or damaged means "nothing recorded": the restore then uses its own umask default.
Windows keeps no POSIX modes, so no record is written there.
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Callable, Collection, Iterable
from typing import NamedTuple

from undostore.platform import IS_WINDOWS
from undostore.store.framing import CorruptFrame, quarantine, read_framed, write_framed

_KIND = b"MODE"
_VERSION = 1
Meta = tuple[int, int, int]     # (permission bits incl. setuid/setgid/sticky, uid, gid)


def current_umask() -> int:
    """The process umask, read without changing it where Linux allows (/proc)."""
    try:
        with open("/proc/self/status", encoding="ascii", errors="replace") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    old = os.umask(0o022)
    os.umask(old)
    return old


class ModeRecord:
    """The umask and owner a snapshot's files were made under, and the files and folders whose
    bits or owner differ from what those give (a plain class, not a dataclass: docs/design.md,
    "Start-up")."""

    __slots__ = ("umask", "uid", "gid", "files", "dirs")

    def __init__(self, umask: int, uid: int, gid: int, files: dict[str, Meta] | None = None,
                 dirs: dict[str, Meta] | None = None) -> None:
        self.umask = umask
        self.uid = uid
        self.gid = gid
        self.files: dict[str, Meta] = {} if files is None else files
        self.dirs: dict[str, Meta] = {} if dirs is None else dirs

    def default_file(self, executable: bool) -> int:
        return (0o777 if executable else 0o666) & ~self.umask

    def file(self, path: str, executable: bool) -> Meta:
        """What file `path` had when snapshotted."""
        return self.files.get(path) or (self.default_file(executable), self.uid, self.gid)

    def folder(self, path: str) -> Meta:
        return self.dirs.get(path) or (0o777 & ~self.umask, self.uid, self.gid)

    def encode(self) -> bytes:
        return json.dumps({"version": _VERSION, "umask": self.umask, "uid": self.uid,
                           "gid": self.gid, "files": self.files, "dirs": self.dirs},
                          sort_keys=True, separators=(",", ":")).encode()

    @classmethod
    def decode(cls, data: bytes) -> ModeRecord | None:
        try:
            raw = json.loads(data)
            if raw.get("version") != _VERSION:
                return None
            return cls(int(raw["umask"]), int(raw["uid"]), int(raw["gid"]),
                       {p: _meta(v) for p, v in raw["files"].items()},
                       {p: _meta(v) for p, v in raw["dirs"].items()})
        except (ValueError, KeyError, TypeError, AttributeError):
            return None


def _meta(value: list[int]) -> Meta:
    perm, uid, gid = value
    return (int(perm), int(uid), int(gid))


def _differs(record: ModeRecord, st_mode: int, uid: int, gid: int) -> Meta | None:
    """The entry a file needs in `record` (None: it has the default bits and owner)."""
    plain = stat.S_IFREG | (0o666 & ~record.umask)
    executable = stat.S_IFREG | (0o777 & ~record.umask)
    if st_mode in (plain, executable):
        return None if (uid, gid) == (record.uid, record.gid) else (st_mode & 0o7777, uid, gid)
    if stat.S_ISLNK(st_mode):
        return None if (uid, gid) == (record.uid, record.gid) else (0o777, uid, gid)
    return (st_mode & 0o7777, uid, gid)


class ModeRecorder:
    """A snapshot's record built as its files are read: `file_read` per file hashed, `save`
    once the tree id is known. Only what the record needs is kept on the way (a file whose bits
    or owner differ from the default, or that the last record lists): a first snapshot of
    80,000 default files holds nothing per file. Does nothing on Windows."""

    def __init__(self, store_path: str, root: str, previous_tree: str | None,
                 umask: int | None = None, unsaved: bytes | None = None) -> None:
        """`previous_tree`: the snapshot the stat cache was saved by, whose record describes
        the files that still match their entries, unless the cache carries the record that
        does (`unsaved`, encoded: see `describing`)."""
        self.store_path = store_path
        self.root = root
        self.enabled = not IS_WINDOWS
        self.previous = describing(store_path, previous_tree, unsaved) \
            if self.enabled else None
        if self.previous is not None:
            prev = self.previous
            self.record = ModeRecord(prev.umask, prev.uid, prev.gid)
        elif self.enabled:
            top = os.lstat(root)
            self.record = ModeRecord(current_umask() if umask is None else umask,
                                     top.st_uid, top.st_gid)
        else:
            self.record = ModeRecord(0, 0, 0)
        self._changed: list[tuple[str, Meta | None]] = []

    def file_read(self, path: str, st: os.stat_result) -> None:
        """File `path` was read now with lstat `st`."""
        if not self.enabled:
            return
        meta = _differs(self.record, st.st_mode, st.st_uid, st.st_gid)
        if meta is not None or (self.previous is not None and path in self.previous.files):
            self._changed.append((path, meta))

    def build(self, looked: Iterable[str], folders: Collection[str],
              unchanged_modes: Callable[[frozenset[int]], Iterable[tuple[str, int]]]
              ) -> ModeRecord:
        """The record of the files now: the last snapshot's record, with entries below folders
        that are gone (`folders`: those that exist now) dropped, and what changed since: the
        files read, the `looked` folders (lstat-ed here). A file whose stat matched the stat
        cache was not chmod-ed or chown-ed since (both change its ctime), so its entry in the
        last record still holds. Without one, `unchanged_modes(usual)` gives each unchanged
        file's st_mode (from the stat cache) that is not in `usual`, and owners are taken to be
        the default."""
        record, previous = self.record, self.previous
        if previous is not None:
            record.files = {p: m for p, m in previous.files.items()
                            if p.rpartition("/")[0] in folders}
            record.dirs = {p: m for p, m in previous.dirs.items() if p in folders}
        else:
            # 0: an entry that matches no stat (written by a restore), its bits unknown;
            # the others need no entry (the default bits and owner, or a symlink).
            usual = frozenset((0, stat.S_IFREG | (0o666 & ~record.umask),
                               stat.S_IFREG | (0o777 & ~record.umask), stat.S_IFLNK | 0o777))
            for path, st_mode in unchanged_modes(usual):
                meta = _differs(record, st_mode, record.uid, record.gid)
                if meta is not None:
                    record.files[path] = meta
            looked = folders
        for path, meta in self._changed:
            if meta is None:
                record.files.pop(path, None)
            else:
                record.files[path] = meta
        executable = 0o777 & ~record.umask
        for path in looked:
            if not path:
                continue
            try:
                st = os.lstat(os.path.join(self.root, path))
            except OSError:
                continue
            bits = st.st_mode & 0o7777
            if bits != executable or st.st_uid != record.uid or st.st_gid != record.gid:
                record.dirs[path] = (bits, st.st_uid, st.st_gid)
            else:
                record.dirs.pop(path, None)
        return record

def describing(store_path: str, tree: str | None, unsaved: bytes | None
               ) -> ModeRecord | None:
    """The record of the files as the stat cache saw them last: the one the cache carries
    (`unsaved`: left by a restore that recorded its writes, whose root has no tree id, or
    by a snapshot whose record could not be saved), else that of its snapshot `tree`; None
    when neither is known."""
    if unsaved:
        return ModeRecord.decode(unsaved)
    return load(store_path, tree) if tree else None


class WrittenFile(NamedTuple):
    """A file a restore wrote, as it stood once written."""

    path: str
    st_mode: int
    uid: int
    gid: int


def left_by_restore(before: ModeRecord, deleted: Iterable[str],
                    written: Iterable[WrittenFile]) -> ModeRecord:
    """The record of the files a restore left: `before` (the record of those it started from)
    without the files it deleted, with the bits and owners of those it wrote. A restore that
    records its writes in the stat cache leaves it no snapshot whose record would say this
    (the files it left alone are as `before` has them, those it wrote as their stat says), so
    it saves this one for the next snapshot to start from. A file it wrote that changes again
    before then no longer matches its entry and is read, bits and owner included, as usual."""
    record = ModeRecord(before.umask, before.uid, before.gid, dict(before.files),
                        dict(before.dirs))
    for path in deleted:
        record.files.pop(path, None)
    for path, st_mode, uid, gid in written:
        meta = _differs(record, st_mode, uid, gid)
        if meta is None:
            record.files.pop(path, None)
        else:
            record.files[path] = meta
    return record


def record_path(store_path: str, tree: str) -> str:
    return os.path.join(store_path, "modes", tree)


def prune(store_path: str, keep: Collection[bytes]) -> int:
    """Remove the records of snapshots not in `keep` (gc: their trees are unreachable); a name
    that is not an id is left alone. Returns the bytes freed."""
    folder = os.path.join(store_path, "modes")
    try:
        names = os.listdir(folder)
    except FileNotFoundError:
        return 0
    freed = 0
    for name in names:
        try:
            sha = bytes.fromhex(name)
        except ValueError:
            continue
        if len(sha) != 20 or sha in keep:
            continue
        path = os.path.join(folder, name)
        try:
            size = os.path.getsize(path)
            os.unlink(path)
            freed += size
        except OSError:
            continue   # busy (Windows) or gone: the next gc tries again
    return freed


def save(store_path: str, tree: str, record: ModeRecord) -> None:
    """Keep `record` for snapshot `tree` (rewritten only when it differs)."""
    if IS_WINDOWS:
        return
    path = record_path(store_path, tree)
    payload = record.encode()
    try:
        if read_framed(path, _KIND) == payload:
            return
    except CorruptFrame:
        quarantine(path)
    os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
    write_framed(path, _KIND, payload, durable=True)


def load(store_path: str, tree: str) -> ModeRecord | None:
    """The record of snapshot `tree`, or None when nothing (usable) was recorded."""
    path = record_path(store_path, tree)
    try:
        payload = read_framed(path, _KIND)
    except CorruptFrame:
        quarantine(path)
        return None
    except OSError:
        return None
    return ModeRecord.decode(payload) if payload is not None else None
