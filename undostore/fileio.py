"""Files replaced atomically: a temp file in the same folder, fsync, `os.replace`, fsync of the
folder, so a reader sees the old content or the new one, never a torn mix. The one such helper,
below every layer that writes (git packs, store metadata, restores); `TEMP_PREFIX` names every
temp file undostore makes, so a walk never captures one and recovery can find them."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import BinaryIO

from undostore.platform import IS_WINDOWS

TEMP_PREFIX = ".undostore-tmp-"


def read_small(path: str, limit: int = 1 << 20) -> bytes | None:
    """Up to `limit` bytes of one of the store's small state files, never read through a
    symbolic link (store/trust.py); None when it is missing or cannot be read."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_BINARY", 0))
    except OSError:
        return None
    try:
        with os.fdopen(fd, "rb") as f:
            return f.read(limit)
    except OSError:
        return None


def write_small(path: str, data: bytes) -> None:
    """Replace one of the store's small cache files with `data` (its folder made first), not
    made durable and best effort: losing it only forgets what it remembered."""
    try:
        os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
        atomic_write(path, data, durable=False)
    except OSError:
        pass


def remove_quietly(path: str) -> None:
    """Delete `path` if it is there (a cache file that no longer applies)."""
    try:
        os.unlink(path)
    except OSError:
        pass


def fsync_dir(path: str) -> None:
    """Make a rename or create inside `path` durable (a no-op where folders cannot be opened)."""
    if IS_WINDOWS:
        return
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def make_durable_dirs(path: str, mode: int = 0o700) -> list[str]:
    """Create `path` and any missing parents, each made durable (its parent fsynced) before
    the next is made inside it: a folder's name counts only once its parent is synced, so a
    power cut cannot lose a folder whose contents were already reported done. Returns the
    folders made."""
    missing: list[str] = []
    current = os.path.abspath(path)
    while not os.path.isdir(current):
        missing.append(current)
        parent = os.path.dirname(current)
        if parent == current:
            break
        current = parent
    made = []
    for folder in reversed(missing):
        try:
            os.mkdir(folder, mode)
            made.append(folder)
        except FileExistsError:
            pass
        fsync_dir(os.path.dirname(folder))
    return made


def make_private_dirs(path: str) -> None:
    """Create `path` and any missing parents as this user's alone (0700, whatever the umask:
    `os.makedirs` gives the parents it makes the umask's mode, 0775 under Debian's 002, which
    the store's trust check then refuses), each durable before anything is made in it."""
    for folder in make_durable_dirs(path, 0o700):
        os.chmod(folder, 0o700)


def replace_with_retry(src: str, dst: str, attempts: int = 20) -> None:
    """`os.replace`, retried briefly on Windows where another handle may hold `dst` open."""
    for attempt in range(attempts):
        try:
            os.replace(src, dst)
            return
        except PermissionError:
            if not IS_WINDOWS or attempt == attempts - 1:
                raise
            time.sleep(0.05 * (attempt + 1))


def temp_path_for(path: str) -> str:
    folder, name = os.path.split(path)
    return os.path.join(folder, f"{TEMP_PREFIX}{os.getpid()}-{time.monotonic_ns()}-{name}")


def atomic_write(path: str, data: bytes, durable: bool = True, mode: int = 0o600) -> None:
    """Replace `path` with `data` so that readers see either the old or the new content."""
    atomic_write_with(path, lambda f: f.write(data), durable, mode)


def atomic_write_with(path: str, fill: Callable[[BinaryIO], object], durable: bool = True,
                      mode: int = 0o600) -> None:
    """As `atomic_write`, the content written by `fill` into the temp file (a large content
    then need not be held in memory whole)."""
    tmp = temp_path_for(path)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), mode)
    try:
        try:
            with open(fd, "wb", closefd=False) as f:
                fill(f)
            if durable:
                os.fsync(fd)
        finally:
            os.close(fd)
        replace_with_retry(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    if durable:
        fsync_dir(os.path.dirname(path) or ".")


# --- checksummed frames --------------------------------------------------------------------------
