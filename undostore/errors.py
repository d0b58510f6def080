"""One error hierarchy for undostore.

Every error carries a message for people, the path it concerns (when there is one) and the exit
code the CLI returns for it, so the CLI maps library errors to exit codes in exactly one place.
`OSError` is turned into an `UndostoreError` at the edges (see `from_oserror`).
"""

from __future__ import annotations

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


class StoreError(UndostoreError):
    """The store cannot be used (cannot be created, locked by a live process, damaged)."""


# --- exit code 2: usage --------------------------------------------------------------------------


class UsageError(UndostoreError):
    """Bad arguments."""

    exit_code = 2


class UnknownSnapshotError(UsageError):
    """An id or prefix that names no snapshot, or more than one."""


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


def from_oserror(err: OSError, action: str, path: str | os.PathLike[str] | None = None,
                 cls: type[UndostoreError] = SnapshotError) -> UndostoreError:
    """Turn an OSError into a domain error that names the path and the cause."""
    where = path if path is not None else err.filename
    cause = err.strerror or err.__class__.__name__
    return cls(f"cannot {action}: {cause}", where)
