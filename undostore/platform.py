"""What differs between the systems undostore runs on, decided once: every other module asks here.

Windows has no exec bit, no `dir_fd`, no `st_ino` from `DirEntry.stat()`, and junctions that are
not symlinks; git treats names case-insensitively there and on macOS by default.
"""

from __future__ import annotations

import os
import stat
import sys

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
