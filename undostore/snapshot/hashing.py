"""Read and hash the files a walk hands over, batch by batch, adding what the store lacks to the
pack.

Batches, so a first snapshot holds the walk's entries of one batch of files rather than of the
whole tree (80,000 files: ~20 MB less at the peak). Files up to `STREAM_THRESHOLD` are read
whole; larger ones are hashed in a streaming pass and, if the store lacks them, compressed in a
second pass that must hash to the same id, so memory stays flat and a file that changes while
being read is caught.
"""

from __future__ import annotations

import os
import stat
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, NamedTuple

from undostore.errors import (
    SnapshotError,
    TreeMovedError,
    UnreadableFilesError,
    from_oserror,
    is_unreadable,
)
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
from undostore.limits import DEFAULT_LIMITS, Limits
from undostore.platform import IS_WINDOWS
from undostore.progress import OnProgress, Progress
from undostore.snapshot.capture import Todo, Work
from undostore.snapshot.ignore import UNDOSTORE_IGNORE
from undostore.snapshot.walk import KIND_LINK, FileEntry, FileStat, disk_path
from undostore.store.statcache import StatCache, make_entry
from undostore.store.store import Store

if TYPE_CHECKING:
    from concurrent.futures import ThreadPoolExecutor

    from undostore.snapshot.resume import Checkpoints

_O_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
# A file swapped for a fifo after the walk must not block the open; fstat then refuses it.
_O_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
_O_BINARY = getattr(os, "O_BINARY", 0)
STREAM_THRESHOLD = 8 << 20
READ_ATTEMPTS = 3

HASH_STEP = "hash"           # the step a snapshot reports (undostore/progress.py)
IO_THREADS = 4
PROBE_FILES = 128
SLOW_FILE_SECONDS = 300e-6   # well above a warm small file's read, hash and compress

Hashed = Callable[[str, os.stat_result], None]


class Blob(NamedTuple):
    """A file's blob id and the stat it was taken with; `read` False: an earlier try of a
    first snapshot kept it (resume.py), this run did not read the file."""

    sha: bytes
    st: os.stat_result | FileStat
    read: bool = True


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
            return self._link_blob(disk)
        last_error = ""
        for _ in range(READ_ATTEMPTS):
            try:
                return self._file_blob(disk)
            except ChangedWhileReading:
                last_error = "file changed while being read"
            except FileNotFoundError as err:
                raise TreeMovedError("file vanished while being captured", disk) from err
            except OSError as err:
                if is_unreadable(err):
                    raise _Unreadable(err.strerror or str(err)) from err
                raise from_oserror(err, "read file", disk) from err
        raise SnapshotError(f"{last_error} ({READ_ATTEMPTS} attempts); try again when it is idle, "
                            f"or list {entry.path!r} in {UNDOSTORE_IGNORE} at the root if undo "
                            "should leave it alone", disk)

    def _link_blob(self, disk: str) -> tuple[bytes, os.stat_result]:
        try:
            target = os.fsencode(os.readlink(disk))
            st = os.lstat(disk)
        except FileNotFoundError as err:
            raise TreeMovedError("symlink vanished while being captured", disk) from err
        except OSError as err:
            if is_unreadable(err):
                raise _Unreadable(err.strerror or str(err)) from err
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


class _Unreadable(Exception):
    """A file this user cannot read (errors.is_unreadable); its argument is the reason."""


def _changed(before: os.stat_result, after: os.stat_result) -> bool:
    return (before.st_size != after.st_size or before.st_mtime_ns != after.st_mtime_ns
            or before.st_ctime_ns != after.st_ctime_ns)


def _git_mode(entry: FileEntry, st: os.stat_result, cache: StatCache) -> int:
    if entry.kind == KIND_LINK:
        return MODE_LINK
    if IS_WINDOWS:
        # No exec bit on disk: keep what the last snapshot said (git's core.filemode=false);
        # a link a restore wrote as a file (no symlink privilege) stays one (core.symlinks=false).
        previous = cache.previous_mode(entry.path)
        return previous if previous in (MODE_FILE, MODE_EXEC, MODE_LINK) else MODE_FILE
    return MODE_EXEC if st.st_mode & stat.S_IXUSR else MODE_FILE


def _large_files(todo: Todo) -> bool:
    """Whether a batch is mostly large files. hashlib and zlib release the GIL on large
    buffers, so threads pay; for many small files the pool's hand-offs cost more than the work
    (a 100,000 file tree took 15 s instead of 5), so only a large average size counts."""
    total = sum(entry.st.st_size for _, _, entry in todo)
    return len(todo) > 1 and total >= 64 << 20 and total // len(todo) >= 256 << 10


class HashRun:
    """Hashes files as the walk finds them: `add` queues a file, a full batch is hashed at once,
    `finish` hashes the rest. Small files on a warm cache go fastest on one thread (the GIL);
    files that wait on the disk (a cold cache, a network share) go faster on several. So unless
    told (`threads`), the first files are hashed on one thread and timed, and the run moves to a
    pool only when they were slow (benchmarks/bench_snapshot.py, "threads"). Use as a context
    manager: the pool, if any, is shut down on the way out."""

    def __init__(self, root: str, store: Store, writer: PackWriter, cache: StatCache, *,
                 threads: int = 0, on_hashed: Hashed, on_progress: OnProgress,
                 limits: Limits = DEFAULT_LIMITS, checkpoints: Checkpoints | None = None) -> None:
        self._hasher = _Hasher(root, store, writer)
        self._checkpoints = checkpoints   # a first snapshot: keeps what it hashed (resume.py)
        self._batch_files = limits.hash_batch_files
        self._task_files = limits.pool_task_files
        self._cache = cache
        self._threads = threads        # 0: not decided yet
        self._probed = False
        self._pool: ThreadPoolExecutor | None = None
        self._on_hashed = on_hashed
        self._on_progress = on_progress
        self.todo: Todo = []
        self.unreadable: dict[str, str] = {}   # path -> reason: files that could not be read
        self.hashed = 0                # files read and hashed by this run
        self.done = 0                  # ... and those an earlier try kept
        self.found = 0                 # files the walk handed over so far, hashed or not

    def __enter__(self) -> HashRun:
        return self

    def __exit__(self, *exc: object) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None

    def counted(self, files: int) -> None:
        """`files` more files found (matched by the cache or queued in `todo`)."""
        self.found += files
        if len(self.todo) >= self._batch_files:
            self._hash_batch()

    def finish(self) -> None:
        """Hash what is still queued. Files that could not be read are all named at the end
        (`UnreadableFilesError`), so the snapshot is taken again once, leaving them all out."""
        if self.todo:
            self._hash_batch()
        if self.unreadable:
            raise UnreadableFilesError(dict(self.unreadable), self._hasher.root)
        self._on_progress(Progress(HASH_STEP, self.found, self.found))

    def _blob(self, item: tuple[Work, int, FileEntry]) -> Blob | None:
        """The file's blob id and stat; None for a file this user cannot read (noted)."""
        entry = item[2]
        if self._checkpoints is not None:
            st = entry.st
            kept = self._checkpoints.take(entry.path, st)
            if kept is not None:
                return Blob(kept, st, read=False)
        try:
            return Blob(*self._hasher.blob_of(entry))
        except _Unreadable as err:
            self.unreadable[entry.path] = str(err)
            return None

    def _record(self, item: tuple[Work, int, FileEntry], result: Blob | None) -> None:
        if result is None:
            return
        st = result.st
        work, index, entry = item
        made = make_entry(st, _git_mode(entry, st, self._cache), result.sha)  # type: ignore[arg-type]
        work.entries[index] = made  # type: ignore[index]
        work.fresh.append(index)
        work.hashed = True
        self._on_hashed(entry.path, st)  # type: ignore[arg-type]
        if result.read:
            self.hashed += 1
            if self._checkpoints is not None:
                self._checkpoints.hashed(entry.path, made)
        self.done += 1
        if self.done % 1000 == 0:
            self._on_progress(Progress(HASH_STEP, self.done, self.found))

    def _hash_batch(self) -> None:
        todo, self.todo = self.todo, []
        self._hash(todo)
        if self._checkpoints is not None:
            self._checkpoints.due()   # no file is being hashed now

    def _hash(self, todo: Todo) -> None:
        start = 0
        if not self._threads and _large_files(todo):
            self._threads = IO_THREADS
        if not self._threads and not self._probed:
            self._probed = True
            probe = todo[:PROBE_FILES]
            began = time.perf_counter()
            for item in probe:
                self._record(item, self._blob(item))
            start = len(probe)
            slow = probe and (time.perf_counter() - began) / len(probe) > SLOW_FILE_SECONDS
            if slow and len(todo) - start >= 2 * PROBE_FILES:
                self._threads = IO_THREADS
        rest = todo[start:]
        if self._threads <= 1:
            for item in rest:
                self._record(item, self._blob(item))
            return
        if self._pool is None:
            from concurrent.futures import ThreadPoolExecutor  # only here: a start-up cost

            self._pool = ThreadPoolExecutor(max_workers=self._threads)
        blob = self._blob

        def hash_batch(batch: Todo) -> list[Blob | None]:
            return [blob(item) for item in batch]

        # Batches: one future per file costs more in hand-offs than a small file's work.
        size = self._task_files
        batches = [rest[i:i + size] for i in range(0, len(rest), size)]
        for batch, results in zip(batches, self._pool.map(hash_batch, batches), strict=True):
            for item, result in zip(batch, results, strict=True):
                self._record(item, result)
