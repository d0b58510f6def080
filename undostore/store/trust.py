"""Whether a store may be used: only one this user made, that no one else can write.

A store is a folder of files undostore writes with the user's rights: the lock, the operation
log, journals, packs. If another user controls a folder on the way to them (an `UNDOSTORE_HOME`
they own, as `sudo -E`, a shared cache or a mis-set variable give), they can plant a symbolic link
where undostore writes (`lock -> /etc/...`) or forge a `FORMAT`, and a root process then writes
through it. So, before anything in a store is opened or made: `UNDOSTORE_HOME`, its `stores`
folder (when the store lies there), the store folder, each folder of its layout and the files at
its top are checked, each by `lstat` (a symbolic link is never followed): owned by the effective
user, writable by no one else, a folder where a folder is expected. Root is not exempt. Folders
below them can only be made by this user then, so nothing deeper needs a look. On Windows, where
ownership and mode bits say nothing, a reparse point (a symbolic link or junction) anywhere on
that chain is refused, and a store outside the user's profile is named (`outside_profile`: the
caller says it on stderr).
"""

from __future__ import annotations

import os
import stat

from undostore.errors import UntrustedStoreError
from undostore.platform import IS_WINDOWS

# The folders of a store's layout (store.py) and the files at its top that undostore opens.
LAYOUT_FOLDERS = ("objects", "objects/pack", "objects/info", "sessions", "cache", "restore",
                  "tmp", "refs", "refs/undostore")
TOP_FILES = ("FORMAT", "lock", "oplog")
_REPARSE = getattr(stat, "FILE_ATTRIBUTE_REPARSE_POINT", 0x400)


def check_store(store_path: str, home: str | None = None) -> None:
    """UntrustedStoreError naming the first folder or file on the way to `store_path` that
    another user could have written (see the module docstring); `home` is `UNDOSTORE_HOME` when
    the store lies in its `stores` folder. Missing parts pass: they are made by this user."""
    if home is not None:
        check(home, folder=True)
        check(os.path.join(home, "stores"), folder=True)
    check(store_path, folder=True)
    for name in LAYOUT_FOLDERS:
        check(os.path.join(store_path, *name.split("/")), folder=True)
    try:
        names = os.listdir(store_path)
    except OSError:
        return
    for name in names:
        if name in TOP_FILES or name.startswith("oplog."):
            check(os.path.join(store_path, name), folder=False)


def outside_profile(store_path: str, *, windows: bool = IS_WINDOWS,
                    profile: str | None = None) -> str | None:
    """On Windows, where `check_store` cannot tell who else may write a folder (no owner or
    mode bits, only ACLs): what to tell the user when the store lies outside their profile
    (`%USERPROFILE%`, or `profile`), where other accounts may have write access (`C:\\shared`,
    another drive). None elsewhere, and for a store inside the profile."""
    if not windows:
        return None
    profile = profile or os.environ.get("USERPROFILE") or os.path.expanduser("~")
    if not profile or profile == "~":
        return None
    store = os.path.normcase(os.path.abspath(store_path))
    home = os.path.normcase(os.path.abspath(profile)).rstrip("\\/")
    if store == home or store.startswith(home + "\\") or store.startswith(home + "/"):
        return None
    return (f"the store {store_path} lies outside your user profile ({profile}): on Windows "
            "undostore cannot check who else may write there; keep it under your profile "
            "(leave UNDOSTORE_HOME unset) unless only you can write to that folder")


def check(path: str, *, folder: bool) -> None:
    """UntrustedStoreError unless `path` is missing, or this user's and writable by no one
    else (a folder when `folder`, a regular file otherwise), never a symbolic link."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return
    except OSError as err:
        raise UntrustedStoreError(f"cannot check the store's {_kind(folder)}: {err.strerror}",
                                  path) from err
    if stat.S_ISLNK(st.st_mode) or getattr(st, "st_file_attributes", 0) & _REPARSE:
        raise UntrustedStoreError(
            f"the store's {_kind(folder)} is a symbolic link (or junction): undostore never "
            f"writes through one; remove it, or point UNDOSTORE_HOME or --store at a folder of "
            f"your own", path)
    if folder != stat.S_ISDIR(st.st_mode) or not (folder or stat.S_ISREG(st.st_mode)):
        raise UntrustedStoreError(f"the store's {_kind(folder)} is not a {_kind(folder)}", path)
    if IS_WINDOWS:
        return
    mine = os.geteuid()
    if st.st_uid != mine:
        raise UntrustedStoreError(
            f"the store's {_kind(folder)} belongs to {_user(st.st_uid)}, not to {_user(mine)} "
            f"who runs undostore: another user could have planted what it would write through; "
            f"use a store of your own (UNDOSTORE_HOME or --store), or `chown -R {_user(mine)}` "
            f"it if it is yours", path)
    if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        raise UntrustedStoreError(
            f"the store's {_kind(folder)} is writable by others (mode "
            f"{stat.S_IMODE(st.st_mode):o}): `chmod go-w` it", path)


def _kind(folder: bool) -> str:
    return "folder" if folder else "file"


def _user(uid: int) -> str:
    try:
        import pwd

        return f"{pwd.getpwuid(uid).pw_name} (uid {uid})"
    except (ImportError, KeyError):
        return f"uid {uid}"
