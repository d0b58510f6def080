"""Freeing the files a restore replaces or deletes on a few threads where that pays, while the
checkout itself stays on one thread and in its order.

Where it pays: on an ext4 without a journal (this project's test machines), unlinking a file
costs 0.3-1.2 ms, nearly all of it freeing the old inode, and those waits overlap across threads
(2,000 unlinks: 0.9-4.3 s on one thread, 0.18-0.35 s on four; 90-110 us each on a quiet
machine). On a journaled ext4 an unlink costs about 20 us and the pool only adds hand-offs of
Python's lock (2,000 replaced files: 0.59 s in all freed inline, 0.66-0.79 s with the pool). So
names are unlinked right away, timed `PROBE` at a time, and the pool takes over once `PROBE` of
them took `SLOW` or more each. Every decision and every change a user can see stays where it
was, and only the freeing moves: a replaced file's old inode ends under a name of the restore
(the checkout swaps the two names where Linux can, else the old file gets a second name first, a
hard link made by `set_aside`, so the rename frees nothing); a deleted file is renamed to such a
name; the names are unlinked here or on the pool.

Those names start with the restore's temp prefix, so a crash leaves them as temp files of the
interrupted restore, which recovery and `--abort` remove like the others. `drain()` waits for the
pool: before removing folders the deletes emptied, and before the final sync, so the journal goes
only once they are gone for good. Where a hard link is refused (a file system without them, a
file this user may not link under protected_hardlinks) `set_aside` says so and the caller
replaces as before. Descriptors handed in are duplicated: the checkout may close its own.
"""

from __future__ import annotations

import errno
import os
import threading
import time
from queue import SimpleQueue

from undostore.restore.rounds import SlowRounds

THREADS = 4
PROBE = 16        # names unlinked right away, timed together
SLOW = 50e-6      # seconds per unlink (over PROBE of them) from which the rest go to the pool
MAX_PENDING = 1024   # names (each with a descriptor) queued at most; discard waits beyond
_REFUSED = {errno.EPERM, errno.EACCES, errno.EXDEV, errno.EMLINK, errno.ENOTSUP,
            errno.EOPNOTSUPP, errno.ENOSYS, errno.EROFS}


class Reclaimer:
    """A pool that unlinks names in folders given by descriptor; `drain()` waits for it."""

    def __init__(self, threads: int = THREADS) -> None:
        self.threads = threads
        self._queue: SimpleQueue[tuple[int, str] | None] = SimpleQueue()
        self._workers: list[threading.Thread] = []
        self._pending = 0
        self._done = threading.Condition()
        self._links = True
        self.failed: list[tuple[str, OSError]] = []   # names left behind (temp files)
        self._pooled = False     # the pool took over (unlinks were slow here)
        self._rounds = SlowRounds(PROBE, SLOW)

    def set_aside(self, dir_fd: int, name: str, aside: str) -> bool:
        """Give the file `name` in the folder `dir_fd` the second name `aside` (a hard link,
        never following a symlink); False if hard links are refused here."""
        if not self._links:
            return False
        try:
            os.link(name, aside, src_dir_fd=dir_fd, dst_dir_fd=dir_fd, follow_symlinks=False)
        except OSError as err:
            if err.errno not in _REFUSED:
                raise
            if err.errno in (errno.EXDEV, errno.ENOTSUP, errno.EOPNOTSUPP, errno.ENOSYS):
                self._links = False   # the whole file system: stop asking
            return False
        return True

    def discard(self, dir_fd: int, name: str) -> None:
        """Unlink `name` in the folder `dir_fd` (a name of this restore's own): right away
        while unlinks are cheap here, else on the pool."""
        if not self._pooled:
            started = time.perf_counter()
            self._unlink(dir_fd, name)
            self._pooled = self._rounds.add(time.perf_counter() - started)
            return
        own = os.dup(dir_fd)   # first: a dup that fails (EMFILE) must not leave a count
        try:
            with self._done:
                while self._pending >= MAX_PENDING:   # bounds the descriptors held
                    self._done.wait()
                self._pending += 1
        except BaseException:
            os.close(own)
            raise
        self._start()
        self._queue.put((own, name))

    def drain(self) -> None:
        """Wait until every name handed to `discard` is unlinked (or has failed)."""
        with self._done:
            while self._pending:
                self._done.wait()

    def close(self) -> None:
        """Drain, then stop the threads."""
        self.drain()
        for _ in self._workers:
            self._queue.put(None)
        for worker in self._workers:
            worker.join()
        self._workers.clear()

    def _unlink(self, dir_fd: int, name: str) -> None:
        try:
            os.unlink(name, dir_fd=dir_fd)
        except FileNotFoundError:
            pass
        except OSError as err:
            self.failed.append((name, err))

    def _start(self) -> None:
        if len(self._workers) >= self.threads:
            return
        worker = threading.Thread(target=self._run, name="undostore-reclaim", daemon=True)
        worker.start()
        self._workers.append(worker)

    def _run(self) -> None:
        while True:
            item = self._queue.get()
            if item is None:
                return
            fd, name = item
            try:
                self._unlink(fd, name)
            finally:
                os.close(fd)
                with self._done:
                    self._pending -= 1
                    if self._pending in (0, MAX_PENDING - 1):
                        self._done.notify_all()
