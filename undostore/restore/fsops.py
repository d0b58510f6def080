"""File operations under a root that someone else may be changing while a restore runs.

POSIX: every folder is opened one component at a time from the root's descriptor with
`O_NOFOLLOW | O_DIRECTORY`, and every change is made relative to a folder's descriptor
(`dir_fd=`). A folder swapped for a symlink after it was checked cannot redirect a write: the
write lands in the folder that was checked (still under the root) or fails. `verify()` then
re-checks that every folder opened still sits at its path, so a swap during a restore stops it as
a conflict. Files are opened with `O_NOFOLLOW`, so a file swapped for a symlink is never opened.

Windows has no `dir_fd`: the nearest equivalent is used there. Before each operation every
component of the folder's path is checked again with `lstat` (same file id as when first seen, a
real folder, no symlink, no reparse point such as a junction), then the operation runs by path.
"""

from __future__ import annotations

import errno
import os
import stat

from undostore.errors import ConflictError, RefusedError, UnsafePathError
from undostore.fileio import replace_with_retry
from undostore.platform import IS_WINDOWS

try:
    import resource
except ImportError:   # Windows, which opens no folder descriptors
    resource = None  # type: ignore[assignment]

HAS_DIR_FD = all(f in os.supports_dir_fd for f in (os.open, os.mkdir, os.unlink, os.rmdir,
                                                    os.rename, os.stat))
_O_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_O_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
_O_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_O_BINARY = getattr(os, "O_BINARY", 0)
_O_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
_REPARSE_POINT = getattr(stat, "FILE_ATTRIBUTE_REPARSE_POINT", 0x400)
_DIR_FLAGS = os.O_RDONLY | _O_DIRECTORY | _O_NOFOLLOW | _O_CLOEXEC
_EVICTED = -1
READ_FLAGS = os.O_RDONLY | _O_NOFOLLOW | _O_NONBLOCK | _O_BINARY | _O_CLOEXEC

ABSENT, FILE, LINK, DIR, OTHER = "absent", "file", "link", "dir", "other"


def folder_budget() -> int:
    """How many folder descriptors a restore keeps open: half of those the process has left
    (its RLIMIT_NOFILE less the ones open now), from 2 (the root and one) to 4,096. A restore
    writes all its temp files and then renames them, so a folder closed in between is opened
    and checked again: with 256, a 2,000-file change over 1,000 folders reopened ~950."""
    if resource is None:
        return 256
    try:
        soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    except (OSError, ValueError):
        return 256
    if soft == resource.RLIM_INFINITY:
        soft = 1 << 20
    for listing in ("/proc/self/fd", "/dev/fd"):
        try:
            used = len(os.listdir(listing))
            break
        except OSError:
            continue
    else:
        used = soft // 2
    return max(2, min(4096, (soft - used) // 2))


def kind_of(st: os.stat_result | None) -> str:
    """What an lstat result is (a Windows reparse point such as a junction counts as OTHER)."""
    if st is None:
        return ABSENT
    mode = st.st_mode
    if stat.S_ISLNK(mode):
        return LINK
    if getattr(st, "st_file_attributes", 0) & _REPARSE_POINT:
        return OTHER
    if stat.S_ISREG(mode):
        return FILE
    if stat.S_ISDIR(mode):
        return DIR
    return OTHER


def ident(st: os.stat_result) -> tuple[int, int]:
    return (st.st_dev, st.st_ino)


class NotAFolder(Exception):
    """A folder on the way is something else (`kind`: FILE, LINK, OTHER) or was replaced."""

    def __init__(self, rel: str, kind: str) -> None:
        super().__init__(rel, kind)
        self.rel = rel
        self.kind = kind


class Dir:
    """One real folder under the root: its descriptor (POSIX) and its path (messages, Windows)."""

    __slots__ = ("rel", "path", "fd", "st")

    def __init__(self, rel: str, path: str, fd: int | None, st: os.stat_result) -> None:
        self.rel = rel
        self.path = path
        self.fd = fd
        self.st = st

    def join(self, name: str) -> str:
        return f"{self.rel}/{name}" if self.rel else name


class DirTree:
    """The folders a restore has opened under `root`, and the operations it makes in them."""

    def __init__(self, root: str, *, use_fds: bool = HAS_DIR_FD,
                 max_open: int | None = None) -> None:
        """`max_open`: folders kept open at most (None: `folder_budget()`)."""
        self.root = root
        self.use_fds = use_fds
        self.max_open = max_open if max_open is not None else folder_budget()
        st = os.lstat(root)
        fd = os.open(root, _DIR_FLAGS) if use_fds else None
        if fd is not None:
            st = os.fstat(fd)
        self._root = Dir("", root, fd, st)
        self._open: dict[str, Dir] = {"": self._root}
        self._ids: dict[str, tuple[int, int]] = {"": ident(st)}
        self.made: list[str] = []   # folders created by `folder(create=True)`, in order

    # --- folders -----

    def folder(self, rel: str, create: bool = False) -> Dir | None:
        """The real folder `rel`; None if missing (and not `create`). With `create`, missing
        folders are made one level at a time (mode 0700 until the caller sets their mode).
        Raises NotAFolder when a component is a file, a symlink, or not what it was."""
        found = self._open.get(rel)
        if found is not None:
            if not self.use_fds:
                self._check_chain(found)
            return found
        parent_rel, _, name = rel.rpartition("/")
        parent = self.folder(parent_rel, create)
        if parent is None:
            return None
        st = self.lstat(parent, name)
        if st is None:
            if not create:
                return None
            try:
                self.mkdir(parent, name, 0o700)
            except FileExistsError:
                pass
            self.made.append(rel)
            st = self.lstat(parent, name)
        kind = kind_of(st)
        if kind != DIR:
            raise NotAFolder(rel, kind)
        assert st is not None
        return self._remember(parent, name, rel, st)

    def _remember(self, parent: Dir, name: str, rel: str, st: os.stat_result) -> Dir:
        known = self._ids.get(rel)
        path = os.path.join(parent.path, name)
        fd = None
        if self.use_fds:
            try:
                fd = os.open(name, _DIR_FLAGS, dir_fd=self._fd(parent))
            except OSError as err:
                if err.errno in (errno.ELOOP, errno.ENOTDIR, errno.ENOENT):
                    raise NotAFolder(rel, kind_of(self.lstat(parent, name))) from None
                raise
            opened = os.fstat(fd)
            if ident(opened) != ident(st):
                os.close(fd)
                raise NotAFolder(rel, "replaced")
            st = opened
        if known is not None and known != ident(st) and (not IS_WINDOWS or st.st_ino):
            if fd is not None:
                os.close(fd)
            raise NotAFolder(rel, "replaced")
        if len(self._open) >= self.max_open:
            self._close_some()
        found = Dir(rel, path, fd, st)
        self._open[rel] = found
        self._ids[rel] = ident(st)
        return found

    def _close_some(self) -> None:
        """Stay under the descriptor limit: close every folder but the root (their ids are
        kept, so reopening one that was replaced in between is noticed)."""
        for rel, found in list(self._open.items()):
            if rel and found.fd is not None:
                os.close(found.fd)
                found.fd = _EVICTED  # a holder of this Dir reopens it through _fd()
            if rel:
                del self._open[rel]

    def _fd(self, d: Dir) -> int | None:
        """`d`'s descriptor (reopened, identity checked, if it was closed), None on Windows."""
        if d.fd != _EVICTED:
            return d.fd
        fresh = self.folder(d.rel)
        if fresh is None:
            raise NotAFolder(d.rel, ABSENT)
        return fresh.fd

    def _check_chain(self, found: Dir) -> None:
        """Windows: every component from the root to `found` is still the folder first seen."""
        parts = found.rel.split("/") if found.rel else []
        path = self.root
        rel = ""
        for name in parts:
            path = os.path.join(path, name)
            rel = f"{rel}/{name}" if rel else name
            try:
                st = os.lstat(path)
            except FileNotFoundError:
                raise NotAFolder(rel, ABSENT) from None
            kind = kind_of(st)
            if kind != DIR:
                raise NotAFolder(rel, kind)
            known = self._ids.get(rel)
            if known is not None and st.st_ino and known != ident(st):
                raise NotAFolder(rel, "replaced")

    def opened(self) -> list[str]:
        """Every folder seen so far (open now or not)."""
        return list(self._ids)

    def forget(self, rel: str) -> None:
        """`rel` and every folder below it were removed by the restore itself."""
        prefix = rel + "/"
        for key in [k for k in self._ids if k == rel or k.startswith(prefix)]:
            del self._ids[key]
            found = self._open.pop(key, None)
            if found is not None and found.fd is not None and found.fd >= 0:
                os.close(found.fd)

    def moved(self, old: str, new: str) -> None:
        """The folder `old` (and all below it) was renamed to `new` by the restore itself: the
        open descriptors stay valid, only their names change (checked again by `verify`)."""
        prefix = old + "/"
        keys = [k for k in self._ids if k == old or k.startswith(prefix)]
        for key in sorted(keys, key=lambda k: k.count("/")):   # parents first: their paths
            moved = new + key[len(old):]
            self._ids[moved] = self._ids.pop(key)
            found = self._open.pop(key, None)
            if found is not None:
                parent_rel, _, name = moved.rpartition("/")
                parent = self._open.get(parent_rel)
                found.rel = moved
                found.path = os.path.join(parent.path if parent else self.root, name)
                self._open[moved] = found

    def remove_tree(self, d: Dir, name: str) -> None:
        """Remove the folder `name` in `d` and everything below it, never following a link
        (a symlink or junction there is removed itself, not what it points to)."""
        rel = d.join(name)
        try:
            inner = self.folder(rel)
        except NotAFolder:
            self.unlink(d, name)
            return
        if inner is None:
            return
        for entry in self.listdir(inner):
            if kind_of(self.lstat(inner, entry)) == DIR:
                self.remove_tree(inner, entry)
            else:
                self.unlink(inner, entry)
        self.forget(rel)
        self.rmdir(d, name)

    def verify(self) -> None:
        """Every folder opened is still the folder at its path (none was swapped for a symlink
        or moved away while the restore ran); ConflictError/UnsafePathError naming it if not."""
        for rel in sorted(self._ids, key=lambda r: (r.count("/"), r)):
            if not rel:
                continue
            parent_rel, _, name = rel.rpartition("/")
            try:
                parent = self.folder(parent_rel)
                st = self.lstat(parent, name) if parent is not None else None
            except NotAFolder as err:
                raise folder_error(err.rel, err.kind, changed=True) from None
            if kind_of(st) != DIR or (st is not None and ident(st) != self._ids[rel]
                                      and (not IS_WINDOWS or st.st_ino)):
                raise folder_error(rel, kind_of(st), changed=True)

    def close(self) -> None:
        for found in self._open.values():
            if found.fd is not None and found.fd >= 0:
                os.close(found.fd)
        self._open.clear()

    # --- operations in one folder -----

    def _at(self, d: Dir, name: str) -> tuple[str, dict[str, int]]:
        """How to name `name` in `d` to an `os` call: relative to `d`'s descriptor, or (Windows)
        by its path once every folder on the way was checked again."""
        fd = self._fd(d)
        if fd is not None:
            return name, {"dir_fd": fd}
        self._check_chain(d)
        return os.path.join(d.path, name), {}

    def lstat(self, d: Dir, name: str) -> os.stat_result | None:
        try:
            target, at = self._at(d, name)
            return os.stat(target, follow_symlinks=False, **at)
        except (FileNotFoundError, NotADirectoryError):
            return None

    def open(self, d: Dir, name: str, flags: int, mode: int = 0o600) -> int:
        """Open `name` in `d`, never following a symlink."""
        target, at = self._at(d, name)
        return os.open(target, flags | _O_NOFOLLOW | _O_CLOEXEC | _O_BINARY, mode, **at)

    def unlink(self, d: Dir, name: str) -> None:
        target, at = self._at(d, name)
        os.unlink(target, **at)

    def rmdir(self, d: Dir, name: str) -> None:
        target, at = self._at(d, name)
        os.rmdir(target, **at)

    def mkdir(self, d: Dir, name: str, mode: int) -> None:
        target, at = self._at(d, name)
        os.mkdir(target, mode, **at)

    def replace(self, d: Dir, src: str, dst: str) -> None:
        fd = self._fd(d)
        if fd is not None:
            os.replace(src, dst, src_dir_fd=fd, dst_dir_fd=fd)
        else:
            self._check_chain(d)
            replace_with_retry(os.path.join(d.path, src), os.path.join(d.path, dst))

    def symlink(self, d: Dir, target: str, name: str) -> None:
        link, at = self._at(d, name)
        os.symlink(target, link, **at)

    def readlink(self, d: Dir, name: str) -> str:
        target, at = self._at(d, name)
        return os.readlink(target, **at)

    def lchown(self, d: Dir, name: str, uid: int, gid: int) -> None:
        target, at = self._at(d, name)
        os.chown(target, uid, gid, follow_symlinks=False, **at)

    def listdir(self, d: Dir) -> list[str]:
        fd = self._fd(d)
        if fd is not None:
            return os.listdir(fd)
        self._check_chain(d)
        return os.listdir(d.path)


def folder_error(rel: str, kind: str, changed: bool = False) -> RefusedError:
    """The refusal for a folder on the way that is not a real folder (exit 3); `changed`: it
    became so while the restore ran (what was done so far went into the real folder)."""
    if changed:
        what = {LINK: "became a symlink", OTHER: "became a junction or special file",
                FILE: "became a file", ABSENT: "was moved away or removed"}.get(
                    kind, "was moved or replaced")
        cls = UnsafePathError if kind in (LINK, OTHER) else ConflictError
        return cls(f"{what} while the restore ran; nothing was written through it and the "
                   "restore stopped there (run `undostore restore --abort` to roll back)", rel)
    if kind in (LINK, OTHER):
        return UnsafePathError("is a symlink or junction where the snapshot has a folder; a "
                               "restore never writes through it", rel)
    if kind in ("replaced", ABSENT):
        return ConflictError("folder was moved or replaced during the restore", rel)
    return ConflictError("is a file that is not in the safety snapshot where the snapshot has "
                         "a folder; it was not overwritten", rel)


__all__ = ["ABSENT", "DIR", "FILE", "HAS_DIR_FD", "LINK", "OTHER", "READ_FLAGS", "Dir",
           "DirTree", "NotAFolder", "folder_error", "ident", "kind_of"]
