"""Which snapshot paths may be written to disk, and why not.

A snapshot is data from the store, and a store can hold anything: a tree written by a buggy or
hostile tool, a snapshot taken on another system, a crafted pack. Before a restore writes a single
file, every name in the target is checked here, so that a restore can never

- leave the root (`..`, `.`, an empty name, a `/` or NUL inside one name, `\\` on Windows);
- write into any repository's `.git`, in any spelling the file system would take for `.git`:
  any case, trailing dots or spaces (`.git.`, `.git `), the NTFS short name (`GIT~1`), an NTFS
  stream suffix (`.git::$INDEX_ALLOCATION`), or HFS+ ignorable code points inside the name;
- create a name Windows cannot hold, when running on Windows (`a:b`, `CON`, `nul.txt`, `LPT1`,
  a trailing dot or space, control characters, `<>"|?*`), which Windows would otherwise turn
  into a different file, a device, or an alternate data stream.

Writing through a symlinked folder is prevented on disk, not here (see checkout.py): whether a
folder is a symlink is a fact about the disk, not about the name.
"""

from __future__ import annotations

import re

from undostore.errors import UnsafePathError
from undostore.platform import IS_WINDOWS

# Code points HFS+ ignores when comparing names (git's `is_hfs_dotgit` list): `.g\u200cit` is
# `.git` on a Mac.
_HFS_IGNORABLE = re.compile("[\u200c-\u200f\u202a-\u202e\u206a-\u206f\ufeff]")
_WINDOWS_BAD_CHARS = re.compile(r'[\x00-\x1f<>:"/\\|?*]')
_WINDOWS_DEVICES = frozenset(
    ["CON", "PRN", "AUX", "NUL", "CONIN$", "CONOUT$"]
    + [f"{dev}{n}" for dev in ("COM", "LPT") for n in (*"123456789", "\u00b9", "\u00b2", "\u00b3")])
_SHORT_GIT = re.compile(r"git~[0-9]+")


def is_git_name(name: str) -> bool:
    """Whether some file system would open `.git` for `name` (git's protectNTFS + protectHFS,
    applied on every platform because a restore must be safe wherever the files end up)."""
    folded = _HFS_IGNORABLE.sub("", name)
    folded = folded.split(":", 1)[0]        # NTFS: `.git::$INDEX_ALLOCATION` is `.git`
    folded = folded.rstrip(" .").lower()    # NTFS drops trailing dots and spaces
    return folded == ".git" or _SHORT_GIT.fullmatch(folded) is not None


def windows_name_problem(name: str) -> str | None:
    """Why Windows cannot hold a file named `name`, or None if it can."""
    bad = _WINDOWS_BAD_CHARS.search(name)
    if bad:
        char = bad.group()
        shown = repr(char) if ord(char) < 32 else f"'{char}'"
        return f"holds {shown}, which Windows does not allow in a file name"
    if name.endswith((".", " ")):
        return "ends with a dot or a space, which Windows drops (it would be another file)"
    stem = name.split(".", 1)[0].rstrip(" ").upper()
    if stem in _WINDOWS_DEVICES:
        return f"{stem} is a reserved device name on Windows (with any extension)"
    if any("\udc80" <= ch <= "\udcff" for ch in name):
        return "is not valid UTF-8, so it has no Windows spelling"
    return None


def name_problem(name: str, *, windows: bool = IS_WINDOWS) -> str | None:
    """Why one path component cannot be written, or None if it can."""
    if (not windows and name.isascii() and "git" not in name.lower()
            and name not in ("", ".", "..") and "/" not in name and "\x00" not in name):
        return None  # the common case, decided without the regular expressions below
    if not name:
        return "an empty file name"
    if name in (".", ".."):
        return f"'{name}' cannot be a file name (it would leave the folder)"
    if "/" in name or "\x00" in name:
        return "a single name holds '/' or NUL (it would be another path)"
    if is_git_name(name):
        return "names a .git folder (in some spelling); a restore never writes into .git"
    if windows:
        return windows_name_problem(name)
    return None


def check_name(name: str, parent: str, *, windows: bool = IS_WINDOWS) -> str:
    """`parent/name` as a snapshot path, or UnsafePathError naming it and the cause."""
    path = f"{parent}/{name}" if parent else name
    problem = name_problem(name, windows=windows)
    if problem:
        raise UnsafePathError(f"unsafe path in the snapshot: {problem}", path)
    return path


def check_path(path: str, *, windows: bool = IS_WINDOWS) -> None:
    """Check every component of a '/'-separated snapshot path (absolute paths fail: the first
    component is empty)."""
    if path.startswith("/") or (len(path) > 1 and path[1] == ":"):
        raise UnsafePathError("unsafe path in the snapshot: an absolute path", path)
    parent = ""
    for name in path.split("/"):
        parent = check_name(name, parent, windows=windows)
