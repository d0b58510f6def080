"""A restore that stopped half-way (killed, power cut): what it was doing, in words for people.

`pending_restore(store)` is what `status` shows as `recovery_required` and what `log`, `sessions`
and `verify` mention; a command that finishes such a restore tells `Worktree.on_recovery` first.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from undostore.restore.restorelog import JournalDamaged, RestoreJournal, read_journal

if TYPE_CHECKING:
    from undostore.store.store import Store


@dataclass(frozen=True)
class PendingRestore:
    """A restore that stopped half-way (killed, power cut) and left its journal: what the next
    command will finish, or `restore --abort` will roll back."""

    operation: str          # "restore", or "abort" (an interrupted roll-back)
    target: str             # hex id the files are being made equal to
    safety: str
    rollback: str           # hex id `restore --abort` returns to
    files: int              # paths the restore planned to change
    started: float          # seconds since the epoch
    damaged: str | None = None   # why the journal cannot be read (then the ids are empty)

    def to_json(self) -> dict[str, Any]:
        if self.damaged is not None:
            return {"operation": None, "target": None, "safety": None, "rollback": None,
                    "files": None, "started": None, "damaged": self.damaged}
        return {"operation": self.operation, "target": self.target, "safety": self.safety,
                "rollback": self.rollback, "files": self.files, "started": self.started,
                "damaged": None}

    def describe(self) -> str:
        """One line for people: what is pending and the two ways out."""
        if self.damaged is not None:
            return (f"an interrupted restore left a damaged journal ({self.damaged}); run "
                    "`undostore restore --abort` to set it aside")
        what = "roll-back" if self.operation == "abort" else "restore"
        return (f"an interrupted {what} to {self.target[:12]} is pending ({self.files} "
                "file(s)): the next snapshot, diff, restore, undo or redo finishes it; "
                "`undostore restore --abort` rolls it back")

    def finishing_notice(self) -> str:
        """The line for people when a command is about to finish it."""
        what = "a roll-back" if self.operation == "abort" else "a restore"
        return (f"finishing {what} to {self.target[:12]} that was interrupted ({self.files} "
                "file(s)); Ctrl-C now rolls it back instead, as `undostore restore --abort` "
                f"does; afterwards `undostore restore {self.rollback[:12]}` goes back")


def pending_restore(store: Store) -> PendingRestore | None:
    """The restore a crash left unfinished, or None. Cheap when there is none (one listdir)."""
    try:
        if not os.listdir(store.restore_dir):
            return None
    except FileNotFoundError:
        return None
    try:
        journal = read_journal(store)
    except JournalDamaged as err:
        return PendingRestore("restore", "", "", "", 0, 0.0, damaged=str(err))
    return pending_of(journal) if journal is not None else None


def pending_of(journal: RestoreJournal) -> PendingRestore:
    return PendingRestore(journal.operation, journal.target, journal.safety, journal.rollback,
                          len(journal.touched()), journal.started)
