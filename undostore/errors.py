"""One error hierarchy for undostore.

Every error carries a message for people, the path it concerns (when there is one) and the exit
code the CLI returns for it, so the CLI maps library errors to exit codes in exactly one place.
`OSError` is turned into an `UndostoreError` at the edges (see `from_oserror`).
"""

from __future__ import annotations

import errno
import os


class UndostoreError(Exception):
    """Something failed; nothing was recorded or changed half-way."""

    exit_code = 1

    def __init__(self, message: str, path: str | os.PathLike[str] | None = None) -> None:
        self.message = message
        self.path = os.fspath(path) if path is not None else None
        super().__init__(str(self))

    def __str__(self) -> str:
        if self.path is None:
            return self.message
        return f"{self.path}: {self.message}"


# --- exit code 1: failed -------------------------------------------------------------------------


class SnapshotError(UndostoreError):
    """A file could not be captured (unreadable, vanished, changed while read, too many files)."""


class TreeMovedError(SnapshotError):
    """Something under the root vanished, or a folder changed, while a snapshot read it: the
    state it saw may never have existed. `take_snapshot` takes it again; only a tree that never
    holds still fails."""

    def __init__(self, message: str, path: str | os.PathLike[str] | None = None,
                 folders: tuple[str, ...] = ()) -> None:
        super().__init__(message, path)
        self.folders = folders


class TooManyFilesError(SnapshotError):
    """The tree holds more files than a snapshot takes (`UNDOSTORE_MAX_FILES`, or the limit the
    caller gave): nothing was recorded. `limit` is that limit."""

    def __init__(self, message: str, path: str | os.PathLike[str] | None, limit: int) -> None:
        super().__init__(message, path)
        self.limit = limit


class UnreadableFilesError(SnapshotError):
    """Files the walk listed could not be opened (no permission, a path too long for the
    system): `take_snapshot` takes the tree again leaving them out, each named in a warning.
    `unreadable` maps each one's path (relative to root) to the system's reason."""

    def __init__(self, unreadable: dict[str, str], path: str | os.PathLike[str] | None = None
                 ) -> None:
        super().__init__(f"{len(unreadable)} file(s) could not be read", path)
        self.unreadable = unreadable


def is_unreadable(err: OSError) -> bool:
    """Whether `err` says an entry cannot be read by this user at all (no permission, a path
    longer than the system takes), not that the tree moved or the disk failed: such an entry is
    left out of a snapshot with a warning instead of failing the whole tree."""
    return isinstance(err, PermissionError) or err.errno == errno.ENAMETOOLONG


class StoreError(UndostoreError):
    """The store cannot be used (cannot be created, locked by a live process, damaged)."""


class UntrustedStoreError(StoreError):
    """A store, or a folder or file on the way to it, that another user could have written
    (store/trust.py): never used, not even locked."""


class StoreWriteError(StoreError):
    """The store's disk refused a write (full, over quota, read-only, no permission); the path
    is the store, not the file being captured."""


# --- exit code 2: usage --------------------------------------------------------------------------


class UsageError(UndostoreError):
    """Bad arguments."""

    exit_code = 2


class UnknownSnapshotError(UsageError):
    """An id or prefix that names no snapshot, or more than one."""


class NoStoreError(UsageError):
    """A read-only command in a folder that no store protects: nothing was recorded there, and
    nothing is made to say so."""


class ConfirmationNeeded(UsageError):
    """An operation needs `--yes` (or a `confirm` callback) and none was given."""


# --- exit code 3: refused to protect data --------------------------------------------------------


class RefusedError(UndostoreError):
    """undostore refused to go on because going on could lose data."""

    exit_code = 3


class ConflictError(RefusedError):
    """A file changed after the safety snapshot; it was not overwritten."""


class IncompleteSnapshotError(RefusedError):
    """The store lacks objects (or holds damaged ones) that a snapshot needs."""

    def __init__(self, message: str, missing: list[str] | None = None,
                 corrupt: list[str] | None = None, path: str | None = None) -> None:
        self.missing = list(missing or [])
        self.corrupt = list(corrupt or [])
        super().__init__(message, path)


class UnsafePathError(RefusedError):
    """A snapshot holds a path that cannot be written safely on this system."""


class PendingRecoveryError(RefusedError):
    """An interrupted restore must be finished or rolled back first."""


# --- interrupted (exit code 130) -----------------------------------------------------------------


class Interrupted(KeyboardInterrupt):
    """Ctrl-C stopped an operation; the message says what became of what it had half-done.
    A KeyboardInterrupt, so callers that stop on Ctrl-C stop on this too."""

    exit_code = 130

    def __init__(self, message: str) -> None:
        self.message = message
        super().__init__(message)


_DISK_HINTS = {
    errno.ENOSPC: "free space on its disk, or move the store with --store DIR",
    getattr(errno, "EDQUOT", -1): "free space within your disk quota, or move the store",
    errno.EROFS: "its disk is read-only: move the store with --store DIR",
}


def store_write_error(err: OSError, store_path: str | os.PathLike[str]) -> StoreWriteError:
    """The error for an OSError raised while writing into the store: it names the store (not
    the file being captured), says the store could not be written, why, and what to do."""
    cause = err.strerror or err.__class__.__name__
    hint = _DISK_HINTS.get(err.errno or 0,
                           "check that its folder is writable, or move it with --store DIR")
    return StoreWriteError(f"the store could not be written: {cause}; nothing was recorded "
                           f"({hint})", store_path)


def from_oserror(err: OSError, action: str, path: str | os.PathLike[str] | None = None,
                 cls: type[UndostoreError] = SnapshotError) -> UndostoreError:
    """Turn an OSError into a domain error that names the path and the cause."""
    where = path if path is not None else err.filename
    cause = err.strerror or err.__class__.__name__
    return cls(f"cannot {action}: {cause}", where)
