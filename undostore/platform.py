"""What differs between the systems undostore runs on, decided once: every other module asks here.

Windows has no exec bit, no `dir_fd`, no `st_ino` from `DirEntry.stat()`, and junctions that are
not symlinks; git treats names case-insensitively there and on macOS by default.
"""

from __future__ import annotations

import os
import stat
import sys
from collections.abc import Callable

IS_WINDOWS = sys.platform == "win32"
IS_LINUX = sys.platform.startswith("linux")
IGNORE_CASE_DEFAULT = sys.platform in ("win32", "darwin")   # git's core.ignorecase default there

_REPARSE_POINT = getattr(stat, "FILE_ATTRIBUTE_REPARSE_POINT", 0x400)


def is_junction(entry: os.DirEntry[str]) -> bool:
    """A Windows reparse point (junction, mount point) that `is_symlink()` does not report."""
    if not IS_WINDOWS:
        return False
    try:
        attributes = entry.stat(follow_symlinks=False).st_file_attributes  # type: ignore[attr-defined]
    except (OSError, AttributeError):
        return False
    return bool(attributes & _REPARSE_POINT)


def libc_function(name: str, *argtypes: str) -> Callable[..., int] | None:
    """The C library's `name` (Linux only; `argtypes`: ctypes type names, it returns an int)
    for a call Python's os module does not offer; None where it is missing. A failed call
    returns non-zero and leaves its code to `last_errno()`."""
    if not IS_LINUX:
        return None
    try:
        import ctypes

        function = getattr(ctypes.CDLL(None, use_errno=True), name)
    except (OSError, AttributeError, ImportError):
        return None
    function.argtypes = [getattr(ctypes, kind) for kind in argtypes]
    function.restype = ctypes.c_int
    return function


def last_errno() -> int:
    """The errno of the last `libc_function` call that failed on this thread."""
    import ctypes

    return ctypes.get_errno()
