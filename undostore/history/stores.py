"""Every store under `$UNDOSTORE_HOME/stores`: the `stores` listing, the stores a moved project
left behind, and `rebind`, which moves one to where its project now is.

A store's default place is the hash of its root's path, so a project that moves finds no store
and starts an empty one. `orphans` names the stores whose root is gone (cheap: one FORMAT read
each, done only when a command is about to make a new store); `rebind` renames the old store to
the new root's place (one rename in the same folder) and re-points it. A store made at that
place meanwhile is set aside under a name of its own (`stores` still lists it), or removed when
it holds nothing at all (no object, no session, no op: nothing was handed out from it).
"""

from __future__ import annotations

import os
import shutil
import time
from typing import Any, NamedTuple

from undostore.errors import StoreError, UndostoreError, UsageError, from_oserror
from undostore.git.objects import BLOB, MODE_EXEC, MODE_FILE, MODE_TREE, hash_object
from undostore.history import journal as journals
from undostore.home import stores_folder
from undostore.store import oplog
from undostore.store.store import Store, default_store_path, recorded_root

SET_ASIDE = ".set-aside-"


class StoreInfo(NamedTuple):
    """One store: its folder, the root it protects, whether that root still exists, its size,
    its sessions and when it was last used (its newest op, else its folder's time)."""

    path: str
    root: str | None
    root_exists: bool
    bytes: int
    sessions: list[str]
    last_used: float | None

    def to_json(self) -> dict[str, Any]:
        return dict(self._asdict())


class Rebound(NamedTuple):
    """What `rebind` did: the store now protecting `root`, where it came from, and the store
    it set aside (one made at that place after the move), if any."""

    store: str
    root: str
    moved_from: str | None
    set_aside: str | None

    def to_json(self) -> dict[str, Any]:
        return dict(self._asdict())


def stores_dir(home: str | None = None) -> str:
    return stores_folder(home)


def _store_folders(home: str | None) -> list[str]:
    folder = stores_dir(home)
    try:
        names = sorted(os.listdir(folder))
    except FileNotFoundError:
        return []
    except OSError as err:
        raise from_oserror(err, "list the stores", folder, StoreError) from err
    return [os.path.join(folder, n) for n in names
            if os.path.isfile(os.path.join(folder, n, "FORMAT"))]


def list_stores(home: str | None = None) -> list[StoreInfo]:
    """Every store under `home` (default `$UNDOSTORE_HOME`), in name order."""
    return [_info(path) for path in _store_folders(home)]


def orphans(home: str | None = None) -> list[str]:
    """Stores whose recorded root no longer exists: what a moved project left behind."""
    out = []
    for path in _store_folders(home):
        root = recorded_root(path)
        if root and not os.path.isdir(root):
            out.append(path)
    return out


def _info(path: str) -> StoreInfo:
    root = recorded_root(path)
    size, newest = 0, None
    for folder, _, names in os.walk(path):
        for name in names:
            try:
                st = os.lstat(os.path.join(folder, name))
            except OSError:
                continue
            size += st.st_size
    ops = oplog.read(path)
    newest = ops[0].time if ops else _mtime(path)
    sessions_dir = os.path.join(path, "sessions")
    try:
        files = os.listdir(sessions_dir)
    except OSError:
        files = []
    names = sorted(n for n in (journals.decode_name(f[:-len(journals.SUFFIX)])
                               for f in files if f.endswith(journals.SUFFIX)) if n is not None)
    return StoreInfo(path, root, bool(root) and os.path.isdir(root), size, names, newest)


def _mtime(path: str) -> float | None:
    try:
        return os.stat(path).st_mtime
    except OSError:
        return None


def rebind(root: str, store: str | None = None, home: str | None = None) -> Rebound:
    """Make `store` (default: the one store whose root is gone) protect `root`. A store in the
    default folder moves to `root`'s default place, where plain commands, hooks and the MCP
    server look; a store elsewhere (named with `--store` or `UNDOSTORE_STORE`) is re-pointed
    where it is. UsageError when no store, or more than one, could be meant."""
    real = os.path.realpath(root)
    target = default_store_path(real)
    source = os.path.abspath(store) if store is not None else _the_orphan(target, home)
    if not os.path.isfile(os.path.join(source, "FORMAT")):
        raise UsageError("no undostore store here", source)
    set_aside = moved_from = None
    if _same_path(os.path.dirname(source), stores_dir(home)) and not _same_path(source, target):
        if os.path.lexists(target):
            set_aside = f"{target}{SET_ASIDE}{int(time.time())}"
            _rename(target, set_aside)
            if _holds_nothing(set_aside):
                shutil.rmtree(set_aside, ignore_errors=True)
                set_aside = None
        _rename(source, target)
        moved_from, source = source, target
    with Store(source, root=real, rebind=True):
        pass
    return Rebound(source, real, moved_from, set_aside)


def _the_orphan(target: str, home: str | None) -> str:
    left = [p for p in orphans(home) if not _same_path(p, target)]
    if os.path.isfile(os.path.join(target, "FORMAT")):
        mine = recorded_root(target)
        if mine and not os.path.isdir(mine):
            return target   # this place's store itself records a root that is gone
    if len(left) == 1:
        return left[0]
    if not left:
        raise UsageError("no store of a moved project found (every store's root still exists; "
                         "`undostore stores` lists them); name one with --store")
    listing = "; ".join(f"{p} (was {recorded_root(p)})" for p in left)
    raise UsageError(f"several stores lost their root: {listing}; name one with "
                     "`undostore --store PATH rebind`")


class Adoption(NamedTuple):
    """What the first command in a folder with no store found: the stores a moved project left
    whose files are here (`candidates`, at least one), and the one it took along (`rebound`;
    None when several matched)."""

    rebound: Rebound | None
    candidates: list[str]


# A moved project: of the top-level entries its store's newest snapshot holds, this share is here
# (each still a folder or a file), and of the files sampled from it, this share holds the very
# content (a project of the same layout is not the same project).
MATCH_SHARE = 0.9
CONTENT_SHARE = 0.5
SAMPLE_FILES = 64
SAMPLE_MAX_BYTES = 1 << 20


def adopt_moved(root: str, home: str | None = None) -> Adoption | None:
    """For a root with no store at its default place: take along the one store whose root is
    gone and whose files are here (a moved project keeps its history with no command). Several
    such stores: none is taken (`candidates` names them; `rebind` picks one). None: no store
    matched (or another process took it along meanwhile)."""
    real = os.path.realpath(root)
    target = default_store_path(real)
    matching = [p for p in orphans(home)
                if not _same_path(p, target) and files_match(p, real)]
    if not matching:
        return None
    if len(matching) > 1:
        return Adoption(None, matching)
    try:
        return Adoption(rebind(real, matching[0], home), matching)
    except (UsageError, StoreError):
        if os.path.isfile(os.path.join(target, "FORMAT")):
            return None   # another process took it along meanwhile
        raise


def files_match(store_path: str, root: str) -> bool:
    """Whether the files at `root` are those of the store's newest snapshot: its top-level
    entries are there (`MATCH_SHARE`, each of the same kind), and most of its first
    `SAMPLE_FILES` files hold the same bytes (`CONTENT_SHARE`)."""
    newest = next((op.id for op in oplog.read(store_path) if op.id and op.op in _CAPTURES), None)
    if newest is None:
        return False
    try:
        with Store(store_path, create=False) as store:
            tree = bytes.fromhex(newest)
            entries = store.read_tree(tree)
            sample = [(path, sha) for path, mode, sha in store.iter_tree_files(tree)
                      if mode in (MODE_FILE, MODE_EXEC)][:SAMPLE_FILES]
    except (UndostoreError, ValueError, OSError):
        return False
    if not entries or not sample:
        return False
    here = sum(os.path.isdir(os.path.join(root, os.fsdecode(name))) if mode == MODE_TREE
               else os.path.lexists(os.path.join(root, os.fsdecode(name)))
               for mode, name, _sha in entries)
    same = sum(_holds(os.path.join(root, path), sha) for path, sha in sample)
    return here >= MATCH_SHARE * len(entries) and same >= CONTENT_SHARE * len(sample)


def _holds(path: str, blob: bytes) -> bool:
    """Whether the file at `path` holds the blob `blob` (a file past SAMPLE_MAX_BYTES: its
    presence is enough)."""
    try:
        if os.lstat(path).st_size > SAMPLE_MAX_BYTES:
            return True
        with open(path, "rb") as f:
            return hash_object(BLOB, f.read()) == blob
    except OSError:
        return False


_CAPTURES = ("snapshot", "end-turn", "restore", "undo", "redo", "revert")


def _holds_nothing(path: str) -> bool:
    """A store with no object, no session and no op: nothing was ever handed out from it."""
    def empty(folder: str) -> bool:
        try:
            return not any(os.scandir(folder))
        except FileNotFoundError:
            return True
        except OSError:
            return False
    return (empty(os.path.join(path, "objects", "pack")) and empty(os.path.join(path, "sessions"))
            and not os.path.lexists(oplog.log_path(path)))


def _rename(src: str, dst: str) -> None:
    try:
        os.rename(src, dst)
    except OSError as err:
        raise from_oserror(err, "move the store", src, StoreError) from err


def _same_path(a: str, b: str) -> bool:
    return os.path.normcase(os.path.abspath(a)) == os.path.normcase(os.path.abspath(b))
