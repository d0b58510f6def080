"""The power-cut file system: a FUSE daemon that passes every operation through to a backing
folder while `model.Disk` keeps what would survive a power cut. Asked to cut (after the n-th
fsync, or at once), it stops counting anything as durable; once unmounted it rewrites the
backing folder to the durable state, as a disk would be found after the machine came back.

Run: python -m tests.powercut.fs BACKING MOUNTPOINT --model ordered|strict --control SOCKET
        [--no-symlinks]   (symlink() refused with EPERM, as vfat and exfat do)
Control (one line in, one line out on the Unix socket): `events` -> the fsync count so far,
`arm N` -> cut after the N-th fsync, `cut` -> cut now, `frozen` -> whether it has cut.
The kernel never passes `syncfs` (nor `sync`) to a FUSE daemon, so here only fsync counts.
"""

from __future__ import annotations

import argparse
import ctypes
import errno
import os
import shutil
import socket
import stat
import sys
import threading

import mfusepy

from tests.powercut.model import ROOT, Disk, Node

# Every folder's mtime and ctime with --frozen-folder-times (not on a whole second, so no
# coarse-time rule hides what the test is about).
FROZEN_NS = 1_700_000_000_123_456_789
_STAT_KEYS = ("st_mode", "st_nlink", "st_uid", "st_gid", "st_size", "st_blocks", "st_atime",
              "st_mtime", "st_ctime", "st_ino")
_RENAME_NOREPLACE, _RENAME_EXCHANGE = 1, 2
_libc = ctypes.CDLL(None, use_errno=True)
_renameat2 = getattr(_libc, "renameat2", None)


def _attrs(st: os.stat_result) -> dict[str, int]:
    out = {key: getattr(st, key) for key in _STAT_KEYS if not key.endswith("time")}
    out.update(st_atime=st.st_atime_ns, st_mtime=st.st_mtime_ns, st_ctime=st.st_ctime_ns)
    return out


def _node(kind: str, st: os.stat_result, target: str = "") -> Node:
    return Node(kind, target, stat.S_IMODE(st.st_mode), st.st_uid, st.st_gid, st.st_mtime_ns)


def _backing_flags(flags: int) -> int:
    """Open the backing file readable too (fsync reads it back) and without O_APPEND (the kernel
    sends each write's real offset)."""
    flags &= ~(os.O_APPEND | os.O_CREAT)
    if flags & os.O_ACCMODE == os.O_WRONLY:
        flags = (flags & ~os.O_ACCMODE) | os.O_RDWR
    return flags


def _read_all(fd: int) -> bytes:
    chunks, offset = [], 0
    while True:
        chunk = os.pread(fd, 1 << 20, offset)
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)
        offset += len(chunk)


def scan(backing: str, disk: Disk) -> None:
    """Everything in the backing folder is durable at mount (the machine just came back)."""
    by_inode: dict[int, int] = {}

    def walk(folder: str, parent: int) -> None:
        with os.scandir(folder) as entries:
            for entry in entries:
                st = entry.stat(follow_symlinks=False)
                if stat.S_ISDIR(st.st_mode):
                    ident = disk.new(_node("d", st))
                    walk(entry.path, ident)
                elif stat.S_ISLNK(st.st_mode):
                    ident = disk.new(_node("l", st, os.readlink(entry.path)))
                elif st.st_ino in by_inode:
                    ident = by_inode[st.st_ino]
                else:
                    ident = by_inode[st.st_ino] = disk.new(_node("f", st))
                    with open(entry.path, "rb") as f:
                        disk.data[ident] = f.read()
                disk.set_entry(parent, entry.name, ident, at_mount=True)

    walk(backing, ROOT)


def rebuild(backing: str, disk: Disk) -> None:
    """Replace the backing folder by what `disk` holds durably."""
    fresh = backing.rstrip("/") + ".cut"
    shutil.rmtree(fresh, ignore_errors=True)
    os.mkdir(fresh)
    made: dict[int, str] = {}
    folders: list[tuple[str, Node]] = []
    for path, ident in disk.surviving():
        node, full = disk.nodes[ident], fresh + path
        if node.kind == "d":
            os.mkdir(full)
            folders.append((full, node))
            continue
        if node.kind == "l":
            os.symlink(node.target, full)
            continue
        if ident in made:
            os.link(made[ident], full)
            continue
        made[ident] = full
        with open(full, "wb") as f:
            f.write(disk.data.get(ident, b""))
        _restore_attrs(full, node)
    for full, node in reversed(folders):
        _restore_attrs(full, node)
    shutil.rmtree(backing)
    os.rename(fresh, backing)


def _restore_attrs(full: str, node: Node) -> None:
    if node.uid >= 0 and os.geteuid() == 0:
        os.chown(full, node.uid, node.gid)
    os.chmod(full, node.mode)
    os.utime(full, ns=(node.mtime_ns, node.mtime_ns))


class PowerCutFS(mfusepy.Operations):
    """Pass-through to `backing`, with every name change and fsync told to `disk`."""

    use_ns = True

    def __init__(self, backing: str, disk: Disk, symlinks: bool = True,
                 frozen_folder_times: bool = False) -> None:
        self.backing = backing.rstrip("/")
        self.disk = disk
        self.symlinks = symlinks
        # As object-store mounts (s3fs, gcsfuse) report them: a folder's times never move.
        self.frozen_folder_times = frozen_folder_times
        self.mutex = threading.Lock()
        self.open_ids: dict[int, int] = {}   # backing descriptor -> id

    def _real(self, path: str) -> str:
        return self.backing + path

    def _id(self, path: str) -> int:
        ident = self.disk.lookup(path)
        if ident is None:
            raise FileNotFoundError(errno.ENOENT, "not in the model", path)
        return ident

    # --- reading -----

    def getattr(self, path: str | None, fh: int | None = None) -> dict[str, int]:
        st = os.fstat(fh) if path is None and fh is not None else os.lstat(self._real(path))
        attrs = _attrs(st)
        if self.frozen_folder_times and stat.S_ISDIR(st.st_mode):
            attrs.update(st_mtime=FROZEN_NS, st_ctime=FROZEN_NS)
        return attrs

    def readdir(self, path: str, fh: int) -> list[str]:
        return [".", "..", *os.listdir(self._real(path))]

    def readlink(self, path: str) -> str:
        return os.readlink(self._real(path))

    def statfs(self, path: str) -> dict[str, int]:
        st = os.statvfs(self._real(path))
        return {key: getattr(st, key) for key in ("f_bsize", "f_frsize", "f_blocks", "f_bfree",
                                                   "f_bavail", "f_files", "f_ffree", "f_favail",
                                                   "f_flag", "f_namemax")}

    def getxattr(self, path: str, name: str, position: int = 0) -> bytes:
        return os.getxattr(self._real(path), name, follow_symlinks=False)

    def listxattr(self, path: str) -> list[str]:
        return os.listxattr(self._real(path), follow_symlinks=False)

    def setxattr(self, path: str, name: str, value: bytes, options: int,
                 position: int = 0) -> int:
        os.setxattr(self._real(path), name, value, options, follow_symlinks=False)
        return 0

    def removexattr(self, path: str, name: str) -> int:
        os.removexattr(self._real(path), name, follow_symlinks=False)
        return 0

    # --- names -----

    def _created(self, path: str, kind: str, target: str = "") -> None:
        st = os.lstat(self._real(path))
        with self.mutex:
            parent, name = self.disk.parent_and_name(path)
            self.disk.set_entry(parent, name, self.disk.new(_node(kind, st, target)))

    def mkdir(self, path: str, mode: int) -> int:
        os.mkdir(self._real(path), mode)
        self._created(path, "d")
        return 0

    def symlink(self, target: str, source: str) -> int:
        # mfusepy passes (link path, what it points to)
        if not self.symlinks:
            raise OSError(errno.EPERM, "no symlinks on this file system", target)
        os.symlink(source, self._real(target))
        self._created(target, "l", source)
        return 0

    def mknod(self, path: str, mode: int, dev: int) -> int:
        if not stat.S_ISREG(mode):
            raise OSError(errno.EPERM, "only plain files here", path)
        os.close(os.open(self._real(path), os.O_CREAT | os.O_EXCL | os.O_WRONLY, mode))
        self._created(path, "f")
        return 0

    def create(self, path: str, mode: int, flags: int = os.O_WRONLY) -> int:
        fd = os.open(self._real(path), _backing_flags(flags) | os.O_CREAT, mode)
        self._created(path, "f")
        with self.mutex:
            self.open_ids[fd] = self._id(path)
        return fd

    def link(self, target: str, source: str) -> int:
        # mfusepy passes (new name, existing file)
        os.link(self._real(source), self._real(target))
        with self.mutex:
            parent, name = self.disk.parent_and_name(target)
            self.disk.set_entry(parent, name, self._id(source))
        return 0

    def unlink(self, path: str) -> int:
        os.unlink(self._real(path))
        self._removed(path)
        return 0

    def rmdir(self, path: str) -> int:
        os.rmdir(self._real(path))
        self._removed(path)
        return 0

    def _removed(self, path: str) -> None:
        with self.mutex:
            parent, name = self.disk.parent_and_name(path)
            self.disk.set_entry(parent, name, None)

    def rename(self, old: str, new: str, flags: int = 0) -> int:
        if flags & ~(_RENAME_NOREPLACE | _RENAME_EXCHANGE):
            raise OSError(errno.EINVAL, "unknown rename flags", old)
        if flags:
            if _renameat2 is None:
                raise OSError(errno.EINVAL, "no renameat2 here", old)
            if _renameat2(-100, os.fsencode(self._real(old)), -100,
                          os.fsencode(self._real(new)), flags) != 0:
                code = ctypes.get_errno()
                raise OSError(code, os.strerror(code), old)
        else:
            os.rename(self._real(old), self._real(new))
        with self.mutex:
            old_parent, old_name = self.disk.parent_and_name(old)
            new_parent, new_name = self.disk.parent_and_name(new)
            moved, other = self.disk.live[old_parent][old_name], self.disk.lookup(new)
            self.disk.set_entry(new_parent, new_name, moved)
            self.disk.set_entry(old_parent, old_name,
                                other if flags & _RENAME_EXCHANGE else None)
        return 0

    # --- attributes (bits and owner modelled, times passed through) -----

    def chmod(self, path: str, mode: int) -> int:
        os.chmod(self._real(path), mode)   # never a symlink: the kernel resolves those first
        self._attrs_changed(path)
        return 0

    def chown(self, path: str, uid: int, gid: int) -> int:
        os.chown(self._real(path), uid, gid, follow_symlinks=False)
        self._attrs_changed(path)
        return 0

    def _attrs_changed(self, path: str) -> None:
        st = os.lstat(self._real(path))
        with self.mutex:
            ident = self._id(path)
            self.disk.changed_attrs(ident, _node(self.disk.nodes[ident].kind, st))

    def utimens(self, path: str, times: tuple[int, int] | None = None) -> int:
        if times is None:
            os.utime(self._real(path), follow_symlinks=False)
        else:
            os.utime(self._real(path), ns=times, follow_symlinks=False)
        return 0

    def truncate(self, path: str | None, length: int, fh: int | None = None) -> int:
        if fh is not None:
            os.ftruncate(fh, length)
        else:
            os.truncate(self._real(path), length)
        return 0

    # --- file contents -----

    def open(self, path: str, flags: int) -> int:
        fd = os.open(self._real(path), _backing_flags(flags))
        with self.mutex:
            self.open_ids[fd] = self._id(path)
        return fd

    def read(self, path: str | None, size: int, offset: int, fh: int) -> bytes:
        return os.pread(fh, size, offset)

    def write(self, path: str | None, data: bytes, offset: int, fh: int) -> int:
        return os.pwrite(fh, data, offset)

    def release(self, path: str | None, fh: int) -> int:
        with self.mutex:
            self.open_ids.pop(fh, None)
        os.close(fh)
        return 0

    def fsync(self, path: str | None, datasync: int, fh: int) -> int:
        content, st = _read_all(fh), os.fstat(fh)
        with self.mutex:
            ident = self.open_ids[fh]
            self.disk.fsync_file(ident, content, _node(self.disk.nodes[ident].kind, st))
        return 0

    def fsyncdir(self, path: str, datasync: int, fh: int) -> int:
        with self.mutex:
            self.disk.fsync_folder(self._id(path))
        return 0

    # --- the control socket -----

    def answer(self, line: str) -> str:
        with self.mutex:
            words = line.split()
            if words == ["events"]:
                return str(self.disk.events)
            if words == ["cut"]:
                self.disk.frozen = True
                return "ok"
            if words == ["frozen"]:
                return "yes" if self.disk.frozen else "no"
            if len(words) == 2 and words[0] == "arm":
                self.disk.arm(int(words[1]))
                return "ok"
        return "unknown command"


class _FUSE(mfusepy.FUSE):
    """mfusepy drops rename's flags; RENAME_EXCHANGE and RENAME_NOREPLACE must reach us (a
    restore swaps names with renameat2)."""

    def rename_fuse_3(self, old: bytes, new: bytes, flags: int) -> int:
        return self.operations.rename(old.decode(self.encoding, self.errors),
                                      new.decode(self.encoding, self.errors), flags)


def _serve(ops: PowerCutFS, path: str) -> None:
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(path)
    server.listen(8)

    def loop() -> None:
        while True:
            conn, _ = server.accept()
            with conn, conn.makefile("rw", encoding="utf-8") as f:
                for line in f:
                    f.write(ops.answer(line) + "\n")
                    f.flush()

    threading.Thread(target=loop, daemon=True).start()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("backing")
    parser.add_argument("mountpoint")
    parser.add_argument("--model", default="ordered")
    parser.add_argument("--control", required=True)
    parser.add_argument("--no-symlinks", action="store_true")
    parser.add_argument("--frozen-folder-times", action="store_true")
    args = parser.parse_args(argv)
    disk = Disk(args.model)
    scan(args.backing, disk)
    ops = PowerCutFS(args.backing, disk, symlinks=not args.no_symlinks,
                     frozen_folder_times=args.frozen_folder_times)
    _serve(ops, args.control)
    # One thread: operations reach the model in the order the kernel sent them. No kernel
    # caching of names or attributes beyond a second; unlinked open files really go.
    _FUSE(ops, args.mountpoint, foreground=True, nothreads=True, hard_remove=True,
          fsname="powercut", subtype="powercut")
    if disk.frozen:
        rebuild(args.backing, disk)
    print("unmounted", "cut" if disk.frozen else "clean", disk.events, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
