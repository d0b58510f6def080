"""The restore journal: what an unfinished restore was doing, so the next command can finish it
or `undostore restore --abort` can roll it back.

One file, `<store>/restore/journal`, written durably (temp file, fsync, rename, folder fsync) and
framed with an xxhash checksum *before* the first file changes, and removed only after every
change is durable. It names the snapshot being restored (`target`), the safety snapshot of the
files before (`safety`), the snapshot an abort returns to (`rollback`: the safety snapshot of the
first restore, also when the journal belongs to an abort), the planned paths, and a random token
that the restore's temp files carry in their names, so recovery can find and remove exactly them.

The payload is JSON (readable when someone has to look), with paths as Python strings; names that
are not UTF-8 are kept as surrogate escapes, which JSON's `\\udcXX` escapes carry losslessly.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from dataclasses import dataclass, field

from undostore.fileio import TEMP_PREFIX, fsync_dir
from undostore.store.framing import CorruptFrame, quarantine, read_framed, write_framed
from undostore.store.store import Store

_KIND = b"RSTR"
_VERSION = 1
_LISTS = ("create", "modify", "delete", "chmod", "remove_dirs")


@dataclass
class RestoreJournal:
    operation: str                 # "restore" or "abort"
    token: str                     # hex; the restore's temp files start with temp_prefix(token)
    target: str
    safety: str
    rollback: str
    create: list[str] = field(default_factory=list)
    modify: list[str] = field(default_factory=list)
    delete: list[str] = field(default_factory=list)
    chmod: list[str] = field(default_factory=list)
    remove_dirs: list[str] = field(default_factory=list)
    started: float = field(default_factory=time.time)
    # What the caller wants done once the files are restored (an undo/redo's session step),
    # so that a restore finished by recovery after a crash completes the whole operation.
    context: dict = field(default_factory=dict)

    @classmethod
    def new(cls, operation: str, target: str, safety: str, rollback: str,
            plan: object) -> RestoreJournal:
        """A journal for `plan` (a plan.RestorePlan) with a fresh token."""
        lists = {name: list(getattr(plan, name)) for name in _LISTS}
        return cls(operation, os.urandom(6).hex(), target, safety, rollback, **lists)

    def snapshot_ids(self) -> set[str]:
        return {self.target, self.safety, self.rollback}

    def touched(self) -> set[str]:
        return {*self.create, *self.modify, *self.delete, *self.chmod}

    def write_folders(self) -> set[str]:
        """Folders where this restore may have left temp files ('' is the root): beside the
        files it writes (an exec-bit change of a hard-linked file writes a new file too),
        beside the ones it deletes (earlier versions freed old files under temp names there),
        and in every folder above a created file (a new folder is written whole under a temp
        name beside where it goes, checkout.py)."""
        above: set[str] = {""}
        for path in self.create:   # (not plan.parent_dirs: the hook reads journals, never plans)
            while "/" in path:
                path = path.rpartition("/")[0]
                above.add(path)
        return above | {path.rpartition("/")[0] for path in (*self.modify, *self.chmod,
                                                                *self.delete)}


def temp_prefix(token: str) -> str:
    """Name prefix of one restore's temp files (distinct from every other writer's)."""
    return f"{TEMP_PREFIX}r{token}-"


class JournalDamaged(Exception):
    """The journal exists but failed its checksum or does not parse."""

    def __init__(self, path: str, why: str) -> None:
        self.path = path
        super().__init__(f"{path}: restore journal is damaged ({why})")


def journal_path(store: Store) -> str:
    return os.path.join(store.restore_dir, "journal")


def write_journal(store: Store, journal: RestoreJournal) -> None:
    """Durably replace the journal (the old one, if any, is gone in the same rename)."""
    os.makedirs(store.restore_dir, exist_ok=True)
    # vars, not asdict: its fields are plain lists and dicts, which asdict would copy deeply
    # for nothing.
    payload = json.dumps({"version": _VERSION, **vars(journal)}, ensure_ascii=True)
    write_framed(journal_path(store), _KIND, payload.encode("ascii"), durable=True)


def read_journal(store: Store) -> RestoreJournal | None:
    """The pending journal, None if there is none; JournalDamaged if it cannot be trusted."""
    path = journal_path(store)
    try:
        payload = read_framed(path, _KIND)
    except CorruptFrame:
        raise JournalDamaged(path, "checksum mismatch") from None
    if payload is None:
        return None
    try:
        data = json.loads(payload.decode("ascii"))
        if data.pop("version") != _VERSION:
            raise ValueError("written by another version of undostore")
        journal = RestoreJournal(**data)
        text_fields = (journal.operation, journal.token, journal.target, journal.safety,
                       journal.rollback)
        if not all(isinstance(v, str) for v in text_fields) or not isinstance(
                journal.context, dict) or not all(
                isinstance(getattr(journal, name), list) for name in _LISTS):
            raise ValueError("unexpected field types")
    except (ValueError, TypeError, KeyError, UnicodeDecodeError) as err:
        raise JournalDamaged(path, str(err)) from None
    return journal


def remove_journal(store: Store) -> None:
    """Forget the journal, durably (called once every change of the restore is durable)."""
    try:
        os.unlink(journal_path(store))
    except FileNotFoundError:
        return
    fsync_dir(store.restore_dir)


def set_journal_aside(store: Store) -> str:
    """Move a damaged journal out of the restore folder (kept for inspection in the store's
    top folder: an empty restore folder is how commands know nothing is pending)."""
    aside = os.path.join(store.path, f"restore-journal.damaged-{int(time.time())}")
    try:
        os.replace(journal_path(store), aside)
    except OSError:
        return quarantine(journal_path(store))
    return aside


def remove_restore_temps(root: str, store_path: str) -> list[str]:
    """Remove every restore temp file under `root` (any token: with the store lock held no
    restore is running, so all are left over); for when the journal that named the folders is
    too damaged to read. `.git` folders and the store are not entered, symlinks not followed.
    Returns the paths removed."""
    prefix = TEMP_PREFIX + "r"
    store_real = os.path.realpath(store_path)
    removed = []
    for folder, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if d != ".git"
                   and os.path.realpath(os.path.join(folder, d)) != store_real]
        for name in [d for d in dirs if d.startswith(prefix)]:
            dirs.remove(name)   # a new folder staged whole (checkout.py)
            path = os.path.join(folder, name)
            if shutil.rmtree.avoids_symlink_attacks and not os.path.islink(path):
                shutil.rmtree(path, ignore_errors=True)
                if not os.path.lexists(path):
                    removed.append(path)
        for name in files:
            if name.startswith(prefix):
                path = os.path.join(folder, name)
                try:
                    os.unlink(path)
                    removed.append(path)
                except OSError:
                    continue
    return removed


def pending_snapshot_ids(store: Store) -> set[str]:
    """Hex ids a pending restore journal still needs (gc must keep them)."""
    try:
        journal = read_journal(store)
    except JournalDamaged:
        return set()
    return journal.snapshot_ids() if journal is not None else set()
