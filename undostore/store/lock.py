"""The store lock: one writer at a time, readers beside each other, and never a stale lock.

The lock is an OS file lock (`fcntl.flock` on POSIX, `msvcrt.locking` on Windows) on
`<store>/lock`. The operating system drops it when the holding process dies, however it dies, so a
crashed snapshot or restore never blocks later runs. The file also records the holder's pid and
command, only to make the "locked by" message useful.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import TracebackType

from undostore.errors import StoreError, store_write_error
from undostore.platform import IS_WINDOWS

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)   # never a lock through a planted link (trust.py)

if IS_WINDOWS:
    import msvcrt

    def _try_lock(fd: int, shared: bool = False) -> bool:
        # Windows has no shared byte-range lock through msvcrt: a reader holds it alone.
        try:
            os.lseek(fd, 0, os.SEEK_SET)
            msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)
            return True
        except OSError:
            return False

    def _unlock(fd: int) -> None:
        os.lseek(fd, 0, os.SEEK_SET)
        msvcrt.locking(fd, msvcrt.LK_UNLCK, 1)

    _HOLDER_AT = 16  # Windows locks byte 0; the holder note lives past it so others can read it
else:
    import fcntl

    def _try_lock(fd: int, shared: bool = False) -> bool:
        try:
            fcntl.flock(fd, (fcntl.LOCK_SH if shared else fcntl.LOCK_EX) | fcntl.LOCK_NB)
            return True
        except OSError:
            return False

    def _unlock(fd: int) -> None:
        fcntl.flock(fd, fcntl.LOCK_UN)

    _HOLDER_AT = 0


class StoreLock:
    """Exclusive lock on a store; re-entrant within one object."""

    def __init__(self, path: str, timeout: float = 30.0, what: str = "",
                 on_acquire: Callable[[], None] | None = None) -> None:
        self.path = path
        self.timeout = timeout
        self.what = what or " ".join(os.path.basename(a) for a in sys.argv[:2])
        self._fd: int | None = None
        self._depth = 0
        self.on_acquire = on_acquire   # runs each time the lock is newly taken
        # Counts each time the lock is newly taken: what was read under one holding is known
        # to be current only while that holding lasts (journal.load's read-once cache).
        self.holding = 0

    @property
    def held(self) -> bool:
        """Whether this object holds the lock now."""
        return self._depth > 0

    def acquire(self) -> None:
        if self._depth:
            self._depth += 1
            return
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT | _NOFOLLOW | getattr(os, "O_BINARY", 0),
                         0o600)
        except OSError as err:   # a read-only or full disk: the store's, said as such
            raise store_write_error(err, os.path.dirname(self.path)) from err
        self._wait(fd, shared=False)
        note = f"pid {os.getpid()} ({self.what})\n".encode()
        try:
            os.lseek(fd, _HOLDER_AT, os.SEEK_SET)
            os.write(fd, note)
            os.ftruncate(fd, _HOLDER_AT + len(note))
        except OSError:
            pass  # the note is only for messages
        self._fd = fd
        self._depth = 1
        self.holding += 1
        if self.on_acquire is not None:
            try:
                self.on_acquire()
            except BaseException:
                self.release()
                raise

    def _wait(self, fd: int, shared: bool) -> None:
        """Take the lock on `fd`, waiting up to `timeout` (then StoreError naming the holder,
        `fd` closed)."""
        deadline = time.monotonic() + self.timeout
        delay = 0.01
        while not _try_lock(fd, shared):
            if time.monotonic() >= deadline:
                holder = _read_holder(fd)
                os.close(fd)
                raise StoreError(
                    f"store is busy: locked by {holder or 'another process'} "
                    f"for more than {self.timeout:g} s", self.path)
            time.sleep(delay)
            delay = min(delay * 2, 0.2)

    @contextmanager
    def reading(self) -> Iterator[None]:
        """Held while a read-only command reads: a writer waits for it, other readers do not
        (POSIX). The lock file is opened read-only and never created or written, so a store
        on a read-only disk is read as any other; a store with no lock file has never had a
        writer. Within this object's own lock, nothing more is taken."""
        if self._depth:
            yield
            return
        try:
            fd = os.open(self.path, os.O_RDONLY | _NOFOLLOW | getattr(os, "O_BINARY", 0))
        except FileNotFoundError:
            yield
            return
        except OSError as err:
            raise StoreError(f"cannot open the store's lock to read: {err.strerror or err}",
                             self.path) from err
        self._wait(fd, shared=True)
        try:
            yield
        finally:
            try:
                _unlock(fd)
            finally:
                os.close(fd)

    def release(self) -> None:
        if not self._depth:
            return
        self._depth -= 1
        if self._depth:
            return
        fd, self._fd = self._fd, None
        assert fd is not None
        try:
            _unlock(fd)
        finally:
            os.close(fd)

    def __enter__(self) -> StoreLock:
        self.acquire()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.release()


def held_elsewhere(path: str) -> bool:
    """Whether a live process holds the lock at `path` now (a dead one's lock is gone with it).
    Never creates the file; takes and drops the lock at once when it is free."""
    try:
        fd = os.open(path, os.O_RDWR | getattr(os, "O_BINARY", 0))
    except OSError:
        return False
    try:
        if not _try_lock(fd):
            return True
        _unlock(fd)
        return False
    finally:
        os.close(fd)


def _read_holder(fd: int) -> str:
    try:
        os.lseek(fd, _HOLDER_AT, os.SEEK_SET)
        return os.read(fd, 200).decode("utf-8", "replace").strip()
    except OSError:
        return ""
