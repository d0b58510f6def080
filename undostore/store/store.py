"""The private store of one root: where it lives, its layout, and reading its objects.

Layout (see README "Store layout"):

    <store>/FORMAT              "undostore 1" and the root it protects
    <store>/lock                the store lock (lock.py)
    <store>/objects/pack/       git packs: one per snapshot with something new, repacked by gc
    <store>/refs/undostore/...  anchor refs that keep journal-listed snapshots reachable
    <store>/sessions/           one journal per session
    <store>/cache/statcache     the stat cache
    <store>/restore/            the journal of a restore in progress

Objects are read through dulwich's `DiskObjectStore` (never `Repo`: no git config, no filters).
"""

from __future__ import annotations

import atexit
import hashlib
import os
import re
import stat
import weakref
import zlib
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

from undostore.errors import (
    IncompleteSnapshotError,
    SnapshotError,
    StoreError,
    UnknownSnapshotError,
    UsageError,
)
from undostore.git.objects import BLOB, TREE, PackIndexSet, decode_tree, object_header
from undostore.store.lock import StoreLock
from undostore.store.recent import all_ids

if TYPE_CHECKING:
    from dulwich.object_store import DiskObjectStore

FORMAT_LINE = "undostore 1"
_LAYOUT_NAMES = {"FORMAT", "lock", "objects", "sessions", "cache", "restore", "tmp", "refs"}
_HEX = re.compile(r"^[0-9a-fA-F]{4,40}$")

# Stores whose dulwich reader is open. Closed at interpreter exit, before module teardown: a
# dulwich pack finalised during teardown prints "Exception ignored ... sys.meta_path is None"
# when the caller never called close().
_OPEN_STORES: weakref.WeakSet[Store] = weakref.WeakSet()


@atexit.register
def _close_open_stores() -> None:
    for store in list(_OPEN_STORES):
        try:
            store.close()
        except Exception:  # noqa: BLE001 (nothing may be printed at exit)
            pass


def default_home() -> str:
    return os.environ.get("UNDOSTORE_HOME") or os.path.join(os.path.expanduser("~"), ".undostore")


def default_store_path(root: str) -> str:
    """`$UNDOSTORE_HOME/stores/<first 16 hex of sha256(realpath(root))>` (the contract)."""
    real = os.path.realpath(root)
    digest = hashlib.sha256(os.fsencode(real)).hexdigest()[:16]
    return os.path.join(default_home(), "stores", digest)


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


def _make_private_dirs(path: str) -> None:
    """Create `path` and any missing parents with mode 0700 (`os.makedirs` applies the mode to
    the last folder only)."""
    missing: list[str] = []
    current = os.path.abspath(path)
    while not os.path.isdir(current):
        missing.append(current)
        parent = os.path.dirname(current)
        if parent == current:
            break
        current = parent
    for folder in reversed(missing):
        try:
            os.mkdir(folder, 0o700)
        except FileExistsError:
            pass
        os.chmod(folder, stat.S_IRWXU)


class Store:
    """One root's object database, refs, journals and caches."""

    def __init__(self, path: str, root: str | None = None, create: bool = True) -> None:
        self.path = os.path.abspath(path)
        self.objects_dir = os.path.join(self.path, "objects")
        self.pack_dir = os.path.join(self.objects_dir, "pack")
        self.sessions_dir = os.path.join(self.path, "sessions")
        self.cache_dir = os.path.join(self.path, "cache")
        self.restore_dir = os.path.join(self.path, "restore")
        self.tmp_dir = os.path.join(self.path, "tmp")
        self.root = root
        self.identity = ""
        if create:
            self._ensure_layout()
        elif not os.path.isfile(os.path.join(self.path, "FORMAT")):
            raise StoreError("no undostore store here", self.path)
        # Whoever takes the lock sees the packs as they are now: another process's gc may have
        # repacked since this object last looked, and a stale pack list would claim pruned
        # objects still exist (a snapshot would then skip writing them).
        self.lock = StoreLock(os.path.join(self.path, "lock"), on_acquire=self.refresh)
        self._index: PackIndexSet | None = None
        self._dulwich: DiskObjectStore | None = None
        self.listed_snapshots: Callable[[], set[bytes]] = set

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
            return
        if os.path.isdir(self.path) and set(os.listdir(self.path)) - _LAYOUT_NAMES:
            raise StoreError("folder exists, is not empty and is not an undostore store",
                             self.path)
        # Two processes may create the same new store at once: creating the layout is
        # idempotent, and FORMAT is linked into place whole, so the second one reads the first's.
        try:
            _make_private_dirs(self.path)
            for folder in (self.objects_dir, self.pack_dir, os.path.join(self.objects_dir, "info"),
                           self.sessions_dir, self.cache_dir, self.restore_dir, self.tmp_dir,
                           os.path.join(self.path, "refs"),
                           os.path.join(self.path, "refs", "undostore")):
                _make_private_dirs(folder)
            from undostore.store.atomic import atomic_write

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
        except OSError as err:
            raise StoreError(f"cannot create the store: {err.strerror}", self.path) from err
        self._ensure_layout()  # read back whichever FORMAT won

    # --- objects -----

    @property
    def index(self) -> PackIndexSet:
        """Fast membership over the store's packs (no dulwich import)."""
        if self._index is None:
            self._index = PackIndexSet(self.pack_dir)
        return self._index

    def has(self, sha: bytes) -> bool:
        return sha in self.index

    def refresh(self) -> None:
        """See packs written since this object was opened (by this or another process)."""
        if self._index is not None:
            self._index.refresh()
        if self._dulwich is not None:
            self._dulwich.close()
            self._dulwich = None

    @property
    def dulwich(self) -> DiskObjectStore:
        if self._dulwich is None:
            from dulwich.object_store import DiskObjectStore

            self._dulwich = DiskObjectStore(self.objects_dir)
            _OPEN_STORES.add(self)
        return self._dulwich

    def read(self, sha: bytes) -> tuple[int, bytes]:
        """(type number, body) of an object, hash-checked. Raises IncompleteSnapshotError."""
        hex_id = sha.hex()
        try:
            try:
                type_num, body = self.dulwich.get_raw(hex_id.encode("ascii"))
            except (KeyError, FileNotFoundError):
                # A gc in another process may have repacked since the pack list was read:
                # look again once before calling the object missing.
                self.refresh()
                type_num, body = self.dulwich.get_raw(hex_id.encode("ascii"))
        except KeyError:
            raise IncompleteSnapshotError(f"object {hex_id} is missing from the store",
                                          missing=[hex_id]) from None
        except (zlib.error, ValueError, OSError) as err:
            raise IncompleteSnapshotError(f"object {hex_id} is damaged: {err}",
                                          corrupt=[hex_id]) from err
        if isinstance(body, list):
            body = b"".join(body)
        check = hashlib.sha1(object_header(type_num, len(body)))
        check.update(body)
        if check.digest() != sha:
            raise IncompleteSnapshotError(f"object {hex_id} is damaged (hash mismatch)",
                                          corrupt=[hex_id])
        return type_num, body

    def read_tree(self, sha: bytes) -> list[tuple[int, bytes, bytes]]:
        type_num, body = self.read(sha)
        if type_num != TREE:
            raise UnknownSnapshotError(f"{sha.hex()} is not a snapshot (not a tree)")
        return decode_tree(body)

    def read_blob(self, sha: bytes) -> bytes:
        type_num, body = self.read(sha)
        if type_num != BLOB:
            raise IncompleteSnapshotError(f"object {sha.hex()} is not a blob", corrupt=[sha.hex()])
        return body

    def iter_tree_files(self, tree: bytes, prefix: str = "") -> Iterator[tuple[str, int, bytes]]:
        """Every (path, mode, raw id) of non-tree entries below `tree`, in git's order."""
        for mode, name, sha in self.read_tree(tree):
            path = prefix + os.fsdecode(name)
            if mode == 0o040000:
                yield from self.iter_tree_files(sha, path + "/")
            else:
                yield path, mode, sha

    def object_ids(self) -> Iterator[bytes]:
        """Every object id in the store's packs."""
        for idx in self.index._indexes.values():
            yield from idx.names()

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
            if self.has(sha):
                if self._type_of(sha) == TREE:
                    return sha  # a full id is explicit: any tree the store holds
                raise UnknownSnapshotError(f"{text} is not a snapshot (not a tree)")
            # Only to tell "listed but gone" (exit 3) from "never heard of" (exit 2).
            candidates = [sha] if sha in self.known_snapshots() else []
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
            raise IncompleteSnapshotError(
                f"snapshot {sha.hex()} is listed but missing from the store "
                "(run `undostore verify` for details)", missing=[sha.hex()])
        return sha

    def _type_of(self, sha: bytes) -> int | None:
        from undostore.git.reader import ObjectReader  # reads the record header: no dulwich import

        try:
            with ObjectReader(self) as reader:
                return reader.type_of(sha)
        except IncompleteSnapshotError:
            return None

    def close(self) -> None:
        if self._index is not None:
            self._index.close()
            self._index = None
        if self._dulwich is not None:
            self._dulwich.close()
            self._dulwich = None

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
