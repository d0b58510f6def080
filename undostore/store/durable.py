"""Making many new files durable at once, for restore.

A restore must not rename a temp file into place before the temp file's bytes are on disk, or a
power cut could leave the new name pointing at an empty or torn file. `fsync` per file does that
at ~0.6 ms a file on a typical Linux disk, which for 20,000 files is 12 s. On Linux, `syncfs`
makes every file of one file system durable in a single call, so a restore writes a batch of temp
files, calls `syncfs` once per file system involved, and only then renames the batch into place;
a final `syncfs` (or folder fsyncs) makes the renames, deletes and new folders durable before the
restore journal is removed. Where `syncfs` is missing (macOS, Windows, old libc) each temp file is
fsynced before it is closed and each changed folder is fsynced at the end, like `atomic_write`.

`syncfs` is also not trusted where it does not reach the disk: the kernel never passes it to a
FUSE daemon (gocryptfs, sshfs, rclone, ntfs-3g, fuse-overlayfs), so there it returns 0 having made
nothing durable, while a file's fsync and a folder's fsync do reach the daemon. A root on such a
file system, or with one mounted below it, takes the per-file path (`syncfs_reaches_disk`).
"""

from __future__ import annotations

import os

from undostore.fileio import fsync_dir
from undostore.platform import IS_LINUX, last_errno, libc_function

_MOUNTINFO = "/proc/self/mountinfo"


def _untrusted_type(fstype: str) -> bool:
    """File systems whose `syncfs` does not reach the disk: FUSE (the kernel keeps it)."""
    return fstype in ("fuse", "fuseblk") or fstype.startswith(("fuse.", "fuseblk."))


def _mounts() -> list[tuple[str, str]]:
    """(mount point, file-system type) of every mount this process sees (/proc/self/mountinfo,
    read as text: no `statfs` through ctypes, whose import alone costs a snapshot ~3 ms)."""
    try:
        with open(_MOUNTINFO, encoding="utf-8", errors="surrogateescape") as f:
            lines = f.read().splitlines()
    except OSError:
        return []
    found = []
    for line in lines:
        fields = line.split(" ")
        if "-" not in fields or len(fields) < 5:
            continue
        point = fields[4].replace("\\040", " ").replace("\\011", "\t").replace("\\134", "\\")
        found.append((point, fields[fields.index("-") + 1]))
    return found


def on_fuse(root: str) -> bool:
    """Whether `root` lies on FUSE, or a FUSE file system is mounted below it (Linux, from the
    mount table: the mount nearest above `root`, as `findmnt -T` finds it, and every one below
    it): its daemon decides what `syncfs` and folder times mean. ~0.1 ms."""
    if not IS_LINUX:
        return False
    real = os.path.realpath(root)
    below = real.rstrip("/") + "/"
    mounts = _mounts()
    holding = [(point, kind) for point, kind in mounts
               if point == real or below.startswith(point.rstrip("/") + "/")]
    if holding and _untrusted_type(max(holding, key=lambda mount: len(mount[0]))[1]):
        return True
    return any(_untrusted_type(kind) for point, kind in mounts if point.startswith(below))


def syncfs_reaches_disk(root: str) -> bool:
    """Whether one `syncfs` per file system makes every file under `root` durable: not on FUSE
    (`on_fuse`), where the kernel never passes it to the daemon."""
    return IS_LINUX and not on_fuse(root)


def unwritten_bytes() -> int | None:
    """Bytes the kernel still has to write back, on every file system (Linux: `Dirty` and
    `Writeback` of /proc/meminfo): what one `syncfs` may have to wait for. None where unknown."""
    if not IS_LINUX:
        return None
    try:
        with open("/proc/meminfo", "rb") as f:
            lines = f.read().splitlines()
    except OSError:
        return None
    total = 0
    for line in lines:
        if line.startswith((b"Dirty:", b"Writeback:")):
            total += int(line.split()[1]) * 1024   # in kB
    return total


class Durability:
    """Tracks what a restore changed and makes it durable, cheaply where the OS allows."""

    def __init__(self, root: str, enabled: bool = True, each_file: bool = False) -> None:
        """`each_file`: fsync each file and folder even where `syncfs` is trusted (a restore of
        a few files: `syncfs` would also wait for whatever other programs left unwritten on
        that file system, a build's or a download's gigabyte)."""
        self.enabled = enabled
        trusted = enabled and not each_file and syncfs_reaches_disk(root)
        self._syncfs = libc_function("syncfs", "c_int") if trusted else None
        self._folders: set[str] = set()        # folders whose entries changed
        # st_dev -> the shallowest folder seen on that file system (the root for its own), the
        # one least likely to be removed by the restore before it is synced
        self._devices: dict[int, str] = {os.stat(root).st_dev: root}

    @property
    def fsync_each_file(self) -> bool:
        """Whether writers must fsync each temp file themselves (no syncfs here)."""
        return self.enabled and self._syncfs is None

    def changed(self, folder: str, st_dev: int | None = None) -> None:
        """Note that `folder` (absolute) gained, lost or renamed an entry."""
        self._folders.add(folder)
        if st_dev is not None:
            known = self._devices.get(st_dev)
            if known is None or len(folder) < len(known):
                self._devices[st_dev] = folder

    def changed_in_place(self, fd: int) -> None:
        """A file's bits or owner changed on its open descriptor `fd`: where each file is made
        durable on its own, its fsync commits that (a later syncfs does it elsewhere)."""
        if self.fsync_each_file:
            os.fsync(fd)

    def flush_files(self) -> None:
        """Make every temp file written so far durable (before they are renamed into place)."""
        if self._syncfs is not None:
            self._sync_devices()

    def flush_all(self) -> None:
        """Make every change so far durable: file contents, renames, deletes, new folders."""
        if not self.enabled:
            return
        if self._syncfs is not None:
            self._sync_devices()
        else:
            for folder in sorted(self._folders, key=len, reverse=True):
                fsync_dir(folder)
        self._folders.clear()

    def _sync_devices(self) -> None:
        for folder in list(self._devices.values()):
            try:
                fd = os.open(folder, os.O_RDONLY)
            except FileNotFoundError:
                os.sync()  # that folder is gone (a nested mount emptied): sync everything
                continue
            try:
                if self._syncfs(fd) != 0:
                    code = last_errno()
                    raise OSError(code, os.strerror(code), folder)
            finally:
                os.close(fd)
