"""Whether the last snapshot of a store's root found more files than it takes
(`UNDOSTORE_MAX_FILES`): kept in `cache/over-limit` until a snapshot succeeds, so `status` (a
host's footer) and `doctor` can say the folder is not protected and name the setting, not only
the hook's one line that a host may hide."""

from __future__ import annotations

import json
import os

from undostore.fileio import atomic_write

FILE = "over-limit"


def mark(cache_dir: str, limit: int) -> None:
    """Note that a snapshot was refused for passing `limit` files; best effort."""
    try:
        os.makedirs(cache_dir, mode=0o700, exist_ok=True)
        atomic_write(os.path.join(cache_dir, FILE), json.dumps({"limit": limit}).encode(),
                     durable=False)
    except OSError:
        pass


def clear(cache_dir: str) -> None:
    """A snapshot succeeded: the folder is protected again."""
    try:
        os.unlink(os.path.join(cache_dir, FILE))
    except OSError:
        pass


def read(cache_dir: str) -> int | None:
    """The limit the last snapshot passed, or None when it did not."""
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_BINARY", 0)
    try:
        fd = os.open(os.path.join(cache_dir, FILE), flags)
    except OSError:
        return None
    try:
        with os.fdopen(fd, "rb") as f:
            limit = json.loads(f.read(4096)).get("limit")
    except (OSError, ValueError, AttributeError):
        return None
    return limit if isinstance(limit, int) else None
