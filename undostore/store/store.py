"""The private store of one root: where it lives, its layout, and reading its objects.

Layout (see README "Store layout"):

    <store>/FORMAT              "undostore 1" and the root it protects
    <store>/lock                the store lock (lock.py)
    <store>/objects/pack/       git packs: one per snapshot with something new, repacked by gc
    <store>/refs/undostore/...  anchor refs that keep journal-listed snapshots reachable
    <store>/sessions/           one journal per session
    <store>/cache/statcache     the stat cache
    <store>/restore/            the journal of a restore in progress

Objects are read through one `git.reader.ObjectReader` over the pack folder (`Store.index`),
refreshed whenever the lock is taken.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from undostore.errors import (
    IncompleteSnapshotError,
    NoStoreError,
    SnapshotError,
    StoreError,
    UnknownSnapshotError,
    UsageError,
)
from undostore.fileio import make_private_dirs
from undostore.git.heldobjects import Held
from undostore.git.objects import BLOB, TREE, decode_tree
from undostore.git.reader import ObjectReader
from undostore.git.treewalk import walk
from undostore.home import home, stores_folder
from undostore.store import damage
from undostore.store.lock import StoreLock
from undostore.store.recent import all_ids
from undostore.store.trust import check_store, outside_profile

FORMAT_LINE = "undostore 1"
_LAYOUT_NAMES = {"FORMAT", "lock", "objects", "sessions", "cache", "restore", "tmp", "refs",
                 "damaged"}
_HEX = re.compile(r"^[0-9a-fA-F]{4,40}$")

def default_store_path(root: str) -> str:
    """`$UNDOSTORE_HOME/stores/<first 16 hex of sha256(realpath(root))>` (the contract)."""
    real = os.path.realpath(root)
    digest = hashlib.sha256(os.fsencode(real)).hexdigest()[:16]
    return os.path.join(stores_folder(), digest)


def recorded_root(store: str) -> str | None:
    """The root an existing store says it protects (its FORMAT file), or None."""
    try:
        with open(os.path.join(store, "FORMAT"), encoding="utf-8", errors="surrogateescape") as f:
            for line in f.read().splitlines():
                if line.startswith("root: "):
                    return line[6:] or None
    except OSError:
        return None
    return None


def check_root(root: str, force: bool) -> str:
    """The root's real path; refuses `/`, a drive root or the home folder unless forced."""
    real = os.path.realpath(root)
    if not os.path.isdir(real):
        raise UsageError("root is not a folder", root)
    home = os.path.realpath(os.path.expanduser("~"))
    is_drive_root = os.path.dirname(real) == real
    if not force and (is_drive_root or real == home):
        what = "the file-system root" if is_drive_root else "your home folder"
        # Exit 1 like every other input the snapshot refuses (issue 2), not a usage error.
        raise SnapshotError(f"refusing to protect {what}: pass --force if you mean it", real)
    return real


def same_root(a: str, b: str) -> bool:
    """Whether two recorded roots name the same folder (case-folded where the system does)."""
    return os.path.normcase(os.path.realpath(a)) == os.path.normcase(os.path.realpath(b))


def _same_folder(a: str, b: str) -> bool:
    return os.path.normcase(os.path.abspath(a)) == os.path.normcase(os.path.abspath(b))


class MadeId(str):
    """A full snapshot id the library made or read from its own records (a merge's tree, an
    undo point of a journal, a safety snapshot): used as it is. `Store.resolve` is for what a
    person typed (a prefix, an id to check against what was handed out), and asking it of the
    library's own ids read every journal and the operation log again."""


class Store:
    """One root's object database, refs, journals and caches."""

    def __init__(self, path: str, root: str | None = None, create: bool = True,
                 rebind: bool = False) -> None:
        self.path = os.path.abspath(path)
        self.objects_dir = os.path.join(self.path, "objects")
        self.pack_dir = os.path.join(self.objects_dir, "pack")
        self.sessions_dir = os.path.join(self.path, "sessions")
        self.cache_dir = os.path.join(self.path, "cache")
        self.stat_cache_path = os.path.join(self.path, damage.STAT_CACHE)
        self.restore_dir = os.path.join(self.path, "restore")
        self.tmp_dir = os.path.join(self.path, "tmp")
        self.root = root
        self.identity = ""
        self.recorded_root = ""
        check_store(self.path, home() if _same_folder(os.path.dirname(self.path),
                                                      stores_folder()) else None)
        # Windows: a store outside the user's profile, which the check above cannot vouch for
        # (the CLI, the hook and the MCP server say it on stderr).
        self.trust_note = outside_profile(self.path)
        if create:
            self._ensure_layout()
        elif not os.path.isfile(os.path.join(self.path, "FORMAT")):
            raise NoStoreError(f"no undostore store for {root or 'this folder'} yet: nothing "
                               "was recorded here (`undostore snapshot` makes one)", self.path)
        else:
            self._ensure_layout()
        # Whoever takes the lock sees the packs as they are now: another process's gc may have
        # repacked since this object last looked, and a stale pack list would claim pruned
        # objects still exist (a snapshot would then skip writing them).
        # Objects a read-only look at the files made, held in memory, never written
        # (git/heldobjects.py); the store's readers ask it first.
        self.held: Held = {}
        # Session journals read while the lock is held, by name: (the lock's holding they were
        # read in, the journal). One step reads each once (history/journal.py `load`).
        self.journals_read: dict[str, tuple[int, Any]] = {}
        self.lock = StoreLock(os.path.join(self.path, "lock"), on_acquire=self._locked)
        self._index: ObjectReader | None = None
        self.listed_snapshots: Callable[[], set[bytes]] = set
        if root is not None and rebind:
            self._rebind(root)
        elif root is not None and self.recorded_root and not same_root(self.recorded_root, root):
            # One store, one root: another root's snapshots would overwrite this root's files.
            raise UsageError(
                f"store {self.path} belongs to {self.recorded_root}, not {root}; if the project "
                "moved, `undostore rebind` re-points the store to it")

    # --- layout -----

    def _ensure_layout(self) -> None:
        format_file = os.path.join(self.path, "FORMAT")
        if os.path.isfile(format_file):
            with open(format_file, encoding="utf-8", errors="replace") as f:
                lines = f.read().splitlines()
            if not lines or lines[0].strip() != FORMAT_LINE:
                found = lines[0].strip() if lines else ""
                raise StoreError(f"not an undostore store of this version ({found!r})", self.path)
            self.identity = next((line[4:].strip() for line in lines if line.startswith("id: ")),
                                 "")
            self.recorded_root = next((line[6:].rstrip("\r\n") for line in lines
                                       if line.startswith("root: ")), "")
            return
        if os.path.isdir(self.path) and set(os.listdir(self.path)) - _LAYOUT_NAMES:
            raise StoreError("folder exists, is not empty and is not an undostore store",
                             self.path)
        # Two processes may create the same new store at once: creating the layout is
        # idempotent, and FORMAT is linked into place whole, so the second one reads the first's.
        try:
            make_private_dirs(self.path)
            for folder in (self.objects_dir, self.pack_dir, os.path.join(self.objects_dir, "info"),
                           self.sessions_dir, self.cache_dir, self.restore_dir, self.tmp_dir,
                           os.path.join(self.path, "refs"),
                           os.path.join(self.path, "refs", "undostore")):
                make_private_dirs(folder)
            from undostore.fileio import atomic_write, fsync_dir

            # A random identity: caches bound to it are never trusted by another store.
            identity = os.urandom(8).hex()
            note = f"{FORMAT_LINE}\nid: {identity}\nroot: {self.root or ''}\n"
            draft = os.path.join(self.tmp_dir, f"FORMAT-{identity}")
            atomic_write(draft, note.encode("utf-8", "surrogateescape"))
            try:
                os.link(draft, format_file)  # fails if another process created the store first
            except FileExistsError:
                pass
            except OSError:
                # No hard links here (FAT, some network shares): a plain rename, last one wins.
                if not os.path.exists(format_file):
                    os.replace(draft, format_file)
            finally:
                if os.path.exists(draft):
                    os.unlink(draft)
            fsync_dir(self.path)   # FORMAT's name: the store counts from here
        except OSError as err:
            raise StoreError(f"cannot create the store: {err.strerror}", self.path) from err
        self._ensure_layout()  # read back whichever FORMAT won

    def _rebind(self, root: str) -> None:
        """Record `root` as the root this store protects (after the project moved)."""
        from undostore.fileio import atomic_write

        note = f"{FORMAT_LINE}\nid: {self.identity}\nroot: {root}\n"
        with self.lock:
            atomic_write(os.path.join(self.path, "FORMAT"), note.encode("utf-8", "surrogateescape"))
            damage.void_stat_cache(self.path)   # its stat fingerprints are the old root's
        self.recorded_root = root

    # --- objects -----

    @property
    def index(self) -> ObjectReader:
        """The store's objects: membership, pack names and hash-checked reads."""
        if self._index is None:
            self._index = ObjectReader(self)
        return self._index

    def has(self, sha: bytes) -> bool:
        """Whether the store holds `sha` (what a read-only look holds in memory does not count:
        a snapshot that records writes it)."""
        return sha in self.index

    def readable(self, sha: bytes) -> bool:
        """Whether `sha` can be read: held by the store, or by a read-only look in memory."""
        return sha in self.held or sha in self.index

    def refresh(self) -> None:
        """See packs written since this object was opened (by this or another process)."""
        if self._index is not None:
            self._index.refresh()

    @contextmanager
    def reading(self) -> Iterator[None]:
        """For a read-only command: the store as it is, no writer changing it meanwhile, and
        nothing written (no lock file, no healing: `lock` is for writers)."""
        with self.lock.reading():
            self.refresh()
            yield

    def _locked(self) -> None:
        """The lock was just taken: see the packs as they are now, and heal damaged ones. What
        a read-only look held in memory is let go: a writer records what it needs."""
        self.held.clear()
        self.refresh()
        if self.index.damaged_packs:
            self.heal()

    # --- damage (store/damage.py) -----

    def damaged_copies(self) -> set[tuple[bytes, str]]:
        """(raw id, pack name) of the object copies that failed a check: never used again."""
        return damage.load(self.path)

    def note_damage(self, sha: bytes, pack: str, why: str) -> None:
        """A reader found the copy of `sha` in `pack` damaged: record it, so no snapshot reuses
        the id until the files provide a fresh copy."""
        if self._index is not None:
            self._index.skip.add((sha, pack))
        try:
            damage.record(self.path, sha, pack, why)
        except OSError:
            pass   # a read-only store: this process still skips the copy

    def damaged_ids(self) -> set[bytes]:
        """Ids whose every copy in the store is damaged (they count as absent)."""
        return {sha for sha, _ in self.damaged_copies() if not self.has(sha)}

    def heal(self, full: bool = False) -> list[str]:
        """Heal the packs that failed their open checks: re-index an intact pack, else salvage
        what checks and move it aside. `full` also re-indexes index-less packs (gc, verify
        --repair). Returns one line per pack healed."""
        done = []
        with self.lock:
            if full:
                done += damage.reindex_orphans(self.pack_dir, self.index.has)
                self.refresh()
            for base in sorted(self.index.damaged_packs):
                outcome, saved, lost = damage.heal_pack(base, self.index.has)
                done.append(f"{base}.pack: {outcome}" + (
                    f" ({saved} objects copied out, {lost} lost)" if outcome != "reindexed"
                    else ""))
            if done:
                damage.void_stat_cache(self.path)
            self.refresh()
        return done

    def read(self, sha: bytes) -> tuple[int, bytes]:
        """(type number, body) of an object, hash-checked. Raises IncompleteSnapshotError."""
        try:
            return self.index.read(sha)
        except IncompleteSnapshotError as err:
            if not err.missing:
                raise
        # A gc in another process may have repacked since the pack list was read: look again
        # once before calling the object missing.
        self.refresh()
        return self.index.read(sha)

    def read_tree(self, sha: bytes) -> list[tuple[int, bytes, bytes]]:
        type_num, body = self.read(sha)
        if type_num != TREE:
            raise UnknownSnapshotError(f"{sha.hex()} is not a snapshot (not a tree)")
        try:
            return decode_tree(body)
        except ValueError as err:
            raise IncompleteSnapshotError(f"object {sha.hex()} is damaged: {err}",
                                          corrupt=[sha.hex()]) from None

    def read_blob(self, sha: bytes) -> bytes:
        type_num, body = self.read(sha)
        if type_num != BLOB:
            raise IncompleteSnapshotError(f"object {sha.hex()} is not a blob", corrupt=[sha.hex()])
        return body

    def iter_tree_files(self, tree: bytes, prefix: str = "") -> Iterator[tuple[str, int, bytes]]:
        """Every (path, mode, raw id) of non-tree entries below `tree`, in git's order."""
        for path, mode, sha in walk(self.read_tree, tree, prefix=prefix):
            if mode != 0o040000:
                yield path, mode, sha

    def object_ids(self) -> Iterator[bytes]:
        """Every object id in the store's packs."""
        return self.index.object_ids()

    def known_snapshots(self) -> set[bytes]:
        """Ids this store handed out as snapshots: recent ones, and those the history layer
        lists (`listed_snapshots`, set by whoever opens the store with its history).

        Prefixes resolve against these only: every folder of a snapshot is a tree too, and a
        short prefix that happened to name `docs/`'s tree must not restore it as the root."""
        return self.listed_snapshots() | all_ids(self.path)

    def resolve(self, ref: str) -> bytes:
        """The snapshot id named by `ref`: 40 hex, or a unique prefix of 4+ hex of an id this
        store handed out. Unknown: UnknownSnapshotError (exit 2); known but no longer complete
        in the store: IncompleteSnapshotError (exit 3)."""
        text = ref.strip()
        if not _HEX.match(text):
            raise UnknownSnapshotError(f"not a snapshot id: {ref!r} (expected 4 to 40 hex digits)")
        text = text.lower()
        if len(text) == 40:
            sha = bytes.fromhex(text)
            known = sha in self.known_snapshots() or sha in self._logged_ids()
            if self.has(sha):
                if known and self._type_of(sha) == TREE:
                    return sha
                # A folder's tree is a tree too: restoring it would make the root that folder.
                raise UnknownSnapshotError(
                    f"{text} is not a snapshot of {self.root or 'this root'}: the store holds "
                    "it as part of one (a sub-folder's tree) or as another object; pass an "
                    "id that `snapshot`, `log` or `ops` printed")
            # Only to tell "listed but gone" (exit 3) from "never heard of" (exit 2).
            candidates = [sha] if known else []
        else:
            candidates = sorted(sha for sha in self.known_snapshots()
                                if sha.hex().startswith(text))
        if not candidates:
            raise UnknownSnapshotError(f"unknown snapshot {text}")
        if len(candidates) > 1:
            names = ", ".join(c.hex()[:12] for c in candidates)
            raise UnknownSnapshotError(f"ambiguous snapshot id {text}: matches {names}")
        sha = candidates[0]
        if not self.has(sha):
            if sha in self.listed_snapshots():   # still held: damage
                raise IncompleteSnapshotError(
                    f"snapshot {sha.hex()} is listed but missing from the store "
                    "(run `undostore verify` for details)", missing=[sha.hex()])
            raise IncompleteSnapshotError(
                f"snapshot {sha.hex()} was let go (its session dropped, or older than the "
                "history keeps) and is no longer in the store; `undostore verify` checks what "
                "is still held", missing=[sha.hex()])
        return sha

    def _logged_ids(self) -> set[bytes]:
        """Every id the operation log names, whatever its age (`known_snapshots` holds the
        recent ones): asked only of a full id that is not otherwise known."""
        from undostore.store.oplog import read

        out = set()
        for op in read(self.path):
            for sha in op.named_ids():
                try:
                    out.add(bytes.fromhex(sha))
                except ValueError:
                    continue
        return out

    def _type_of(self, sha: bytes) -> int | None:
        try:
            return self.index.type_of(sha)
        except IncompleteSnapshotError:
            return None

    def close(self) -> None:
        if self._index is not None:
            self._index.close()
            self._index = None

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
