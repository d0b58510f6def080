"""This user's undostore home, its layout, and the test that a folder in it is this user's
alone. Standard library only (`os`, `stat`), and nothing of the package's: the caller of the
resident process imports it on every hook call, before any of the library.

The home is `UNDOSTORE_HOME`, else `~/.undostore`:
- `stores/<digest>/`: one store per protected root (store/store.py names the digest);
- `run/`: the resident process's socket, lock and state (this user's alone, 0700);
- `watchman-sock`: the socket watchman's program last named (snapshot/watchsock.py).
"""

from __future__ import annotations

import os
import stat

STORES_FOLDER = "stores"
RUN_FOLDER = "run"
WATCHMAN_MEMORY = "watchman-sock"


def home() -> str:
    """The folder of this user's stores and per-user files: `UNDOSTORE_HOME`, else
    `~/.undostore`."""
    return os.environ.get("UNDOSTORE_HOME") or os.path.join(os.path.expanduser("~"),
                                                            ".undostore")


def stores_folder(home_folder: str | None = None) -> str:
    """Where the stores of `home_folder` (default: this user's home) lie."""
    return os.path.join(home_folder or home(), STORES_FOLDER)


def run_folder() -> str:
    """The resident process's folder."""
    return os.path.join(home(), RUN_FOLDER)


def watchman_memory() -> str:
    return os.path.join(home(), WATCHMAN_MEMORY)


def owned_folder(st: os.stat_result, shut: int) -> bool:
    """A folder of this user's (by its `lstat`) that grants no one else the rights in `shut`
    (`stat.S_IWGRP | stat.S_IWOTH`: no one else may write; `stat.S_IRWXG | stat.S_IRWXO`: no
    one else may enter). POSIX only: Windows has no owner ids to compare."""
    return stat.S_ISDIR(st.st_mode) and st.st_uid == os.geteuid() and not st.st_mode & shut


def folder_is_private(path: str) -> bool:
    """This user's folder, no symbolic link, that no one else may enter or write."""
    try:
        st = os.lstat(path)
    except OSError:
        return False
    return owned_folder(st, shut=stat.S_IRWXG | stat.S_IRWXO)
