"""What is on disk, read without changing anything: what a path is (never following a link),
whether a file holds a given snapshot entry, whether the file system folds case, and what stands
in the way of a restore plan before anything is written.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Callable
from dataclasses import dataclass

from undostore.errors import ConflictError, RefusedError, UnsafePathError
from undostore.fileio import TEMP_PREFIX
from undostore.git.objects import (
    BLOB,
    MODE_EXEC,
    MODE_LINK,
    ChangedWhileReading,
    hash_blob_fd,
    hash_object,
)
from undostore.platform import IS_WINDOWS
from undostore.restore.fsops import (
    ABSENT,
    DIR,
    FILE,
    LINK,
    OTHER,
    READ_FLAGS,
    Dir,
    DirTree,
    kind_of,
)
from undostore.restore.plan import Entry, RestorePlan
from undostore.snapshot.walk import disk_path
from undostore.store.statcache import StatCache

At = tuple[DirTree, Dir, str]   # a name in a folder opened by the checkout


@dataclass
class Probe:
    kind: str
    st: os.stat_result | None = None


def probe(path: str) -> Probe:
    """What is at `path`, never following a symlink (a junction counts as OTHER)."""
    try:
        st = os.lstat(path)
    except (FileNotFoundError, NotADirectoryError):
        return Probe(ABSENT)
    return Probe(kind_of(st), st)


def is_case_insensitive(root: str) -> bool:
    """Whether the file system under `root` folds case: asked of an existing entry with letters
    (no write), else of a temp file created and removed at once."""
    try:
        names = os.listdir(root)
    except OSError:
        names = []
    for name in names:
        if name.swapcase() != name and not name.startswith(TEMP_PREFIX):
            try:
                mine = os.lstat(os.path.join(root, name))
                other = os.lstat(os.path.join(root, name.swapcase()))
            except OSError:
                return False
            return os.path.samestat(mine, other)
    name = f"{TEMP_PREFIX}case-{os.urandom(4).hex()}"
    path = os.path.join(root, name)
    os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    try:
        return os.path.lexists(os.path.join(root, name.upper()))
    finally:
        os.unlink(path)


class DiskMatcher:
    """Whether a file on disk holds a given entry: stat cache first, hashing when it cannot say."""

    def __init__(self, root: str, cache: StatCache, windows: bool = IS_WINDOWS) -> None:
        self.root = root
        self.cache = cache
        self.windows = windows

    def holds(self, rel: str, found: Probe, want: Entry, at: At | None = None) -> bool:
        """Whether what `found` describes holds `want`. With `at` (the folder's DirTree, its
        Dir, the name), the file is read through the folder's descriptor, never by path."""
        mode, sha = want
        if mode == MODE_LINK:
            if found.kind == LINK:
                if at is not None:
                    target = at[0].readlink(at[1], at[2])
                else:
                    target = os.readlink(disk_path(self.root, rel))
                return hash_object(BLOB, os.fsencode(target)) == sha
            # A host without symlinks got the link target written as a file (see Checkout).
            return self.windows and found.kind == FILE and self.content_id(rel, found, at) == sha
        if found.kind != FILE:
            return False
        assert found.st is not None
        if not self.windows and bool(found.st.st_mode & stat.S_IXUSR) != (mode == MODE_EXEC):
            return False
        return self.content_id(rel, found, at) == sha

    def content_id(self, rel: str, found: Probe, at: At | None = None) -> bytes | None:
        assert found.st is not None
        hit = self.cache.lookup(rel, found.st)
        if hit is not None:
            return hit.blob_id
        try:
            if at is not None:
                fd = at[0].open(at[1], at[2], READ_FLAGS)
            else:
                fd = os.open(disk_path(self.root, rel), READ_FLAGS)
        except FileNotFoundError:
            return None
        except OSError as err:
            if err.errno == errno.ELOOP:
                return None  # swapped for a symlink since it was looked at
            raise
        try:
            st = os.fstat(fd)
            if (st.st_dev, st.st_ino) != (found.st.st_dev, found.st.st_ino) and not self.windows:
                return None  # another file than the one looked at
            return hash_blob_fd(fd, st.st_size)
        except ChangedWhileReading:
            return None
        finally:
            os.close(fd)


def find_obstacles(root: str, plan: RestorePlan, current: dict[str, Entry],
                   case_insensitive: Callable[[], bool]) -> None:
    """Refuse, before anything changes, a plan that would overwrite or write through something
    the safety snapshot does not hold: an ignored or untracked file where the target has a file,
    a symlinked (or junction) folder on the way to a new file, a folder holding ignored files
    where the target has a file. Modified and deleted paths were captured by the safety snapshot,
    so their folders were real folders a moment ago; the checkout checks them again."""
    deleted = set(plan.delete)
    exists: dict[str, bool] = {"": True}

    def folder_exists(rel: str) -> bool:
        known = exists.get(rel)
        if known is not None:
            return known
        parent = rel.rpartition("/")[0]
        result = False
        if folder_exists(parent) and not (rel in current and rel in deleted):  # deleted first
            found = probe(disk_path(root, rel))
            why = ("this restore does not change it" if rel in current
                   else "not in the safety snapshot (ignored?)")
            if found.kind in (LINK, OTHER):
                raise UnsafePathError(f"is a symlink or junction where the target has a folder "
                                      f"({why}); a restore never writes through it", rel)
            if found.kind == FILE:
                raise ConflictError(f"is a file where the target has a folder ({why}); it was "
                                    "not overwritten", rel)
            result = found.kind == DIR
        exists[rel] = result
        return result

    folded_deletes: set[str] | None = None
    for path in plan.create:
        if not folder_exists(path.rpartition("/")[0]):
            continue
        disk = disk_path(root, path)
        found = probe(disk)
        if found.kind == ABSENT:
            continue
        if found.kind == DIR:
            _check_clearable(disk, path, deleted)
            continue
        if case_insensitive():
            if folded_deletes is None:
                folded_deletes = {p.casefold() for p in deleted}
            if path.casefold() in folded_deletes:
                continue  # the same file under its old case, deleted first
        raise ConflictError("exists but is not in the safety snapshot (an ignored, untracked "
                            "or unreadable file); it was not overwritten", path)
    check_writable(root, plan)


def _check_clearable(disk: str, rel: str, deleted: set[str]) -> None:
    """A folder where the target has a file may go only if the restore deletes all it holds."""
    with os.scandir(disk) as entries:
        for entry in entries:
            path = f"{rel}/{entry.name}"
            if entry.is_dir(follow_symlinks=False):
                _check_clearable(entry.path, path, deleted)
            elif path not in deleted:
                raise ConflictError("is a folder holding files that are not in the snapshot "
                                    f"(ignored?), e.g. {entry.name}; it cannot become a file",
                                    rel)


def check_writable(root: str, plan: RestorePlan) -> None:
    """Preflight: every folder the restore writes in can be written, every file it deletes or
    replaces can go (a sticky folder keeps other users' files), and every file whose exec bit
    changes can be re-moded, before the first change, so a read-only folder refuses the restore
    with nothing changed instead of stopping it half-way (RefusedError naming the path)."""
    if IS_WINDOWS:
        return  # no POSIX modes; read-only files are made writable where they are replaced
    euid = os.geteuid()
    folders: dict[str, os.stat_result | None] = {}

    def folder_ok(rel: str, why: str) -> os.stat_result | None:
        """The folder's lstat once it is known writable (the nearest existing one for a folder
        the restore creates)."""
        if rel in folders:
            return folders[rel]
        found = probe(disk_path(root, rel))
        if found.kind == ABSENT and rel:
            folders[rel] = folder_ok(rel.rpartition("/")[0], why)
            return None
        if found.kind != DIR:
            folders[rel] = None
            return None  # a file or link there: the checkout refuses it with its own reason
        if not os.access(disk_path(root, rel), os.W_OK | os.X_OK, effective_ids=True):
            raise RefusedError(f"folder cannot be written by this user, so {why}; nothing "
                               "was changed", rel or root)
        folders[rel] = found.st
        return found.st

    def replaceable(path: str, why: str) -> None:
        parent = folder_ok(path.rpartition("/")[0], why)
        if parent is None or not parent.st_mode & stat.S_ISVTX or euid in (0, parent.st_uid):
            return
        found = probe(disk_path(root, path))
        if found.st is not None and found.st.st_uid != euid:
            raise RefusedError("belongs to another user in a sticky folder, so this user cannot "
                               f"replace or delete it; {why}; nothing was changed", path)

    for path in plan.delete:
        replaceable(path, "the restore could not delete what it must")
    for path in plan.create + plan.modify:
        replaceable(path, "the restore could not write what it must")
    for path in plan.chmod:
        found = probe(disk_path(root, path))
        if found.st is None:
            continue
        if found.st.st_nlink == 1 and euid in (0, found.st.st_uid):
            continue  # changed in place with fchmod
        replaceable(path, "the restore could not change its exec bit")
