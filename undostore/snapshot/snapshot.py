"""Capture the files under root as a git tree in the store; the tree id is the snapshot id.

Steps: walk (walk.py) -> for each file, reuse the stat cache's blob id or read and hash the file ->
new blobs and trees go into one pack (objects.py) -> the pack is committed -> the stat cache is
saved. Only then is the id returned: a snapshot that could not read a file raises and returns no
id, and leaves no pack that anyone trusts.

Files up to `STREAM_THRESHOLD` are read whole; larger files are hashed in a streaming pass and, if
the store lacks them, compressed in a second streaming pass that must hash to the same id, so
memory stays flat and a file that changes while being read is caught.
"""

from __future__ import annotations

import os
import stat
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from undostore.errors import SnapshotError, from_oserror
from undostore.git.objects import (
    BLOB,
    MODE_EXEC,
    MODE_FILE,
    MODE_LINK,
    ChangedWhileReading,
    fd_chunks,
    hash_blob_fd,
    hash_object,
)
from undostore.git.packwriter import PackWriter
from undostore.platform import IS_WINDOWS
from undostore.snapshot.capture import EMPTY_TREE as EMPTY_TREE  # noqa: F401 (public here)
from undostore.snapshot.capture import (
    Todo,
    Work,
    build_trees,
    carried_work,
    count_files,
    match_folder,
    matcher_for,
)
from undostore.snapshot.changes import WALK_FULL, Scan, scan
from undostore.snapshot.ignore import UNDOSTORE_IGNORE
from undostore.snapshot.walk import KIND_LINK, FileEntry, WalkOptions, disk_path, ignore_warning
from undostore.store.moderecord import record_snapshot
from undostore.store.recent import remember
from undostore.store.statcache import Record, StatCache, make_entry, record_entries
from undostore.store.store import Store, check_root

_O_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
# A file swapped for a fifo after the walk must not block the open; fstat then refuses it.
_O_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
_O_BINARY = getattr(os, "O_BINARY", 0)
STREAM_THRESHOLD = 8 << 20
READ_ATTEMPTS = 3


Progress = Callable[[int, int], None]
Warn = Callable[[str, str], None]


def _no_progress(done: int, total: int) -> None:
    pass


@dataclass
class SnapshotOptions:
    """How to take a snapshot. `hash_threads=0` chooses from the amount of work."""

    walk_threads: int = 1
    hash_threads: int = 0
    max_files: int = 1_000_000
    force: bool = False                 # allow `/` or the home folder as root
    durable: bool = True                # fsync the pack (off only for throwaway benchmarks)
    on_progress: Progress = _no_progress
    on_warning: Warn = ignore_warning


@dataclass
class SnapshotResult:
    id: str
    files: int
    hashed: int
    new_objects: int
    new_bytes: int
    seconds: float
    warnings: list[tuple[str, str]] = field(default_factory=list)
    walk: str = WALK_FULL     # "full", or "watchman": only what watchman said changed was read
    recorded: bool = False  # an undo point was recorded (set by Workspace.snapshot)


def store_exclusion(root: str, store: Store) -> frozenset[str]:
    """The store's path relative to root when it lies under root (it is never captured)."""
    real_store = os.path.realpath(store.path)
    rel = os.path.relpath(real_store, root)
    if rel == "." or rel.startswith(".." + os.sep) or rel == ".." or os.path.isabs(rel):
        return frozenset()
    return frozenset({rel.replace(os.sep, "/")})


class _Hasher:
    """Reads files, hashes them, and adds what the store lacks to the pack (thread-safe)."""

    def __init__(self, root: str, store: Store, writer: PackWriter) -> None:
        self.root = root
        self.store = store
        self.writer = writer
        self.lock = threading.Lock()

    def blob_of(self, entry: FileEntry) -> tuple[bytes, os.stat_result]:
        disk = disk_path(self.root, entry.path)
        if entry.kind == KIND_LINK:
            return self._link_blob(entry, disk)
        last_error = ""
        for _ in range(READ_ATTEMPTS):
            try:
                return self._file_blob(disk)
            except ChangedWhileReading:
                last_error = "file changed while being read"
            except FileNotFoundError as err:
                raise SnapshotError("file vanished while being captured", disk) from err
            except OSError as err:
                raise from_oserror(err, "read file", disk) from err
        raise SnapshotError(f"{last_error} ({READ_ATTEMPTS} attempts); try again when it is idle, "
                            f"or list {entry.path!r} in {UNDOSTORE_IGNORE} at the root if undo "
                            "should leave it alone", disk)

    def _link_blob(self, entry: FileEntry, disk: str) -> tuple[bytes, os.stat_result]:
        try:
            target = os.fsencode(os.readlink(disk))
            st = os.lstat(disk)
        except FileNotFoundError as err:
            raise SnapshotError("symlink vanished while being captured", disk) from err
        except OSError as err:
            raise from_oserror(err, "read symlink", disk) from err
        sha = hash_object(BLOB, target)
        self._store_small(sha, target)
        return sha, st

    def _file_blob(self, disk: str) -> tuple[bytes, os.stat_result]:
        fd = os.open(disk, os.O_RDONLY | _O_NOFOLLOW | _O_NONBLOCK | _O_BINARY)
        try:
            before = os.fstat(fd)
            if not stat.S_ISREG(before.st_mode):
                raise SnapshotError("is no longer a regular file", disk)
            if before.st_size <= STREAM_THRESHOLD:
                with os.fdopen(fd, "rb", closefd=False) as f:
                    data = f.read()
                after = os.fstat(fd)
                if len(data) != before.st_size or _changed(before, after):
                    raise ChangedWhileReading()
                sha = hash_object(BLOB, data)
                self._store_small(sha, data)
                return sha, after
            sha = hash_blob_fd(fd, before.st_size)
            if _changed(before, os.fstat(fd)):
                raise ChangedWhileReading()
            if not self._present(sha):
                os.lseek(fd, 0, os.SEEK_SET)
                with self.lock:
                    if sha not in self.writer:
                        self.writer.add_stream(BLOB, sha, before.st_size, fd_chunks(fd))
            after = os.fstat(fd)
            if _changed(before, after):
                raise ChangedWhileReading()
            return sha, after
        finally:
            os.close(fd)

    def _present(self, sha: bytes) -> bool:
        return sha in self.writer or self.store.has(sha)

    def _store_small(self, sha: bytes, data: bytes) -> None:
        if self._present(sha):
            return
        with self.lock:
            self.writer.add(BLOB, sha, data)


def _changed(before: os.stat_result, after: os.stat_result) -> bool:
    return (before.st_size != after.st_size or before.st_mtime_ns != after.st_mtime_ns
            or before.st_ctime_ns != after.st_ctime_ns)


def _git_mode(entry: FileEntry, st: os.stat_result, cache: StatCache) -> int:
    if entry.kind == KIND_LINK:
        return MODE_LINK
    if IS_WINDOWS:
        # No exec bit on disk: keep what the last snapshot said (git's core.filemode=false).
        previous = cache.previous_mode(entry.path)
        return previous if previous in (MODE_FILE, MODE_EXEC) else MODE_FILE
    return MODE_EXEC if st.st_mode & stat.S_IXUSR else MODE_FILE


IO_THREADS = 4
PROBE_FILES = 128
SLOW_FILE_SECONDS = 300e-6   # a warm small file reads, hashes and compresses in 20-60 us here
BATCH_FILES = 64


def _fixed_threads(options: SnapshotOptions, todo: list[FileEntry]) -> int:
    """Threads decided before reading anything; 0 means "probe first"."""
    if options.hash_threads:
        return options.hash_threads
    # Large files: hashlib and zlib release the GIL on large buffers, so threads pay. Many
    # small files are another matter: the pool's hand-offs cost more than the work (a 100,000
    # file tree took 15 s instead of 5), so only a large average size counts.
    total = sum(e.st.st_size for e in todo)
    if len(todo) > 1 and total >= 64 << 20 and total // len(todo) >= 256 << 10:
        return IO_THREADS
    return 0


def take_snapshot(root: str, store: Store, options: SnapshotOptions | None = None
                  ) -> SnapshotResult:
    """Capture `root` into `store`; the store lock must be held by the caller."""
    return _take_snapshot(root, store, options)


def _take_snapshot(root: str, store: Store, options: SnapshotOptions | None) -> SnapshotResult:
    options = options or SnapshotOptions()
    started = time.perf_counter()
    start_ns = time.time_ns()
    warnings: list[tuple[str, str]] = []

    def warn(path: str, message: str) -> None:
        warnings.append((path, message))
        options.on_warning(path, message)

    real_root = check_root(root, options.force)
    cache_path = store.stat_cache_path
    cache = StatCache.load(cache_path, store.identity, on_warning=warn)
    if cache.root is not None and (not store.has(cache.root)
                                   or not cache.trusted_with(store.index.pack_names())):
        # The cache vouches for objects below its last root; if the store lost that root
        # (packs deleted, a store restored from an old backup), trust none of it.
        warn(cache_path, "store lacks the objects the stat cache relied on; hashing everything")
        cache = StatCache(identity=store.identity)
    found = scan(real_root, cache, WalkOptions(threads=options.walk_threads,
                                               max_files=options.max_files,
                                               skip_dirs=store_exclusion(real_root, store),
                                               on_warning=warn,
                                               matcher_for=matcher_for(cache)), warn)

    todo: Todo = []
    works = [match_folder(folder, cache, todo, found.deltas.get(folder.path))
             for folder in found.scanned]
    # Modes read now; a folder whose listing was reused kept its ctime, so no chmod or chown.
    read = [w for w in works if not w.reused]
    looked = [w.path for w in read] + [f"{w.path}/{d}" if w.path else d
                                       for w in read for d in w.subdirs]
    works += [carried_work(path, found.base[path], cache.records) for path in found.carried]
    base = {p: r for p, r in found.base.items() if p not in found.carried}
    total = sum(work.nfiles for work in works)

    writer = PackWriter(store.pack_dir, durable=options.durable)
    try:
        _hash_all(real_root, store, writer, todo, cache, options, total)
        root_tree, records = build_trees(works, base, cache, store, writer, start_ns)
        # Before the commit, so a Ctrl-C here still leaves no pack (a record of a snapshot
        # that never was is harmless).
        _record_modes(store, root_tree, real_root, cache, todo, looked, records, warn)
        writer.commit()
    except BaseException:
        writer.abort()
        raise
    store.refresh()
    remember(store.path, root_tree)  # so gc's grace period covers this id
    unchanged = not todo and records == cache.records and not _new_watch(cache, found)
    if found.base:  # files under folders taken from the cache were not counted
        total = cache.count if unchanged and cache.count >= 0 else count_files(
            records, cache.records, cache.count)
    if found.monitor is not None:
        cache.fsmonitor = found.monitor
    if not unchanged:  # rewriting an identical cache would only cost time
        cache.packs = tuple(sorted(store.index.pack_names()))
        try:
            cache.save_records(cache_path, records, total)
        except OSError as err:
            # The snapshot itself is complete and durable; a missing cache only costs time.
            warn(cache_path, f"could not save the stat cache: {err.strerror or err}")
    return SnapshotResult(id=root_tree.hex(), files=total, hashed=len(todo),
                          new_objects=writer.stats.objects, new_bytes=writer.stats.pack_bytes,
                          seconds=time.perf_counter() - started, warnings=warnings,
                          walk=found.walk)


def _record_modes(store: Store, tree: bytes, root: str, cache: StatCache, todo: Todo,
                  looked: list[str], records: dict[str, Record],
                  warn: Callable[[str, str], None]) -> None:
    """Permission bits and owners, which the tree cannot hold (store/moderecord.py)."""
    try:
        record_snapshot(store.path, tree.hex(), root, cache.root.hex() if cache.root else None,
                        ((entry.path, entry.st) for _, _, entry in todo), looked, records,
                        lambda: _cached_modes(records))
    except OSError as err:
        warn(store.path, f"could not record permission bits: {err.strerror or err}")


def _cached_modes(records: dict[str, Record]) -> Iterable[tuple[str, int]]:
    """(path, st_mode) of every file the stat cache holds (its fingerprint keeps st_mode)."""
    for folder, record in records.items():
        prefix = folder + "/" if folder else ""
        for name, entry in record_entries(record).items():
            yield prefix + name, entry[4]


# Over this many paths reported by watchman, save the new clock even when nothing kept changed
# (the next query then starts from it instead of reporting the same paths again).
RESAVE_AFTER_PATHS = 256


def _new_watch(cache: StatCache, found: Scan) -> bool:
    """Whether the watchman state to save differs from the cache's in more than its clock."""
    new, old = found.monitor, cache.fsmonitor
    if new is None:
        return False
    if old is None or old[1] != new[1] or found.walk == WALK_FULL:
        return True
    (watch, relative, _, recrawls), (old_watch, old_relative, _, old_recrawls) = new[0], old[0]
    return ((watch, relative, recrawls) != (old_watch, old_relative, old_recrawls)
            or found.changed > RESAVE_AFTER_PATHS)


def _hash_all(root: str, store: Store, writer: PackWriter, todo: Todo, cache: StatCache,
              options: SnapshotOptions, total: int) -> None:
    """Hash every file in `todo`. Small files on a warm cache go fastest on one thread (the
    GIL); files that wait on the disk (a cold cache, a network share) go faster on several. So
    unless told, hash the first files on one thread, time them, and move to a pool only when
    they were slow (benchmarks/bench_snapshot.py, "threads")."""
    hasher = _Hasher(root, store, writer)
    done = total - len(todo)

    def record(item: tuple[Work, int, FileEntry], sha: bytes, st: os.stat_result) -> None:
        nonlocal done
        work, index, entry = item
        work.entries[index] = make_entry(st, _git_mode(entry, st, cache), sha)  # type: ignore[index]
        work.fresh.append(index)
        work.hashed = True
        done += 1
        if done % 1000 == 0:
            options.on_progress(done, total)

    threads = _fixed_threads(options, [entry for _, _, entry in todo])
    start = 0
    if threads == 0:
        probe = todo[:PROBE_FILES]
        began = time.perf_counter()
        for item in probe:
            record(item, *hasher.blob_of(item[2]))
        start = len(probe)
        slow = probe and (time.perf_counter() - began) / len(probe) > SLOW_FILE_SECONDS
        threads = IO_THREADS if slow and len(todo) - start >= 2 * PROBE_FILES else 1
    rest = todo[start:]
    if threads <= 1:
        for item in rest:
            record(item, *hasher.blob_of(item[2]))
    else:
        from concurrent.futures import ThreadPoolExecutor  # only here: 5 ms of start-up

        def hash_batch(batch: Todo) -> list[tuple[bytes, os.stat_result]]:
            return [hasher.blob_of(item[2]) for item in batch]

        # Batches: one future per file costs more in hand-offs than a small file's work.
        batches = [rest[i:i + BATCH_FILES] for i in range(0, len(rest), BATCH_FILES)]
        with ThreadPoolExecutor(max_workers=threads) as pool:
            for batch, results in zip(batches, pool.map(hash_batch, batches), strict=True):
                for item, result in zip(batch, results, strict=True):
                    record(item, *result)
    options.on_progress(total, total)
