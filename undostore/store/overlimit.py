"""Whether the last snapshot of a store's root found more files than it takes
(`UNDOSTORE_MAX_FILES`): kept in `cache/over-limit` until a snapshot succeeds, so `status` (a
host's footer) and `doctor` can say the folder is not protected and name the setting, not only
the hook's one line that a host may hide."""

from __future__ import annotations

import json
import os

from undostore.fileio import read_small, remove_quietly, write_small

FILE = "over-limit"


def mark(cache_dir: str, limit: int) -> None:
    """Note that a snapshot was refused for passing `limit` files; best effort."""
    write_small(os.path.join(cache_dir, FILE), json.dumps({"limit": limit}).encode())


def clear(cache_dir: str) -> None:
    """A snapshot succeeded: the folder is protected again."""
    remove_quietly(os.path.join(cache_dir, FILE))


def read(cache_dir: str) -> int | None:
    """The limit the last snapshot passed, or None when it did not."""
    raw = read_small(os.path.join(cache_dir, FILE), 4096)
    try:
        limit = json.loads(raw).get("limit") if raw is not None else None
    except (ValueError, AttributeError):
        return None
    return limit if isinstance(limit, int) else None
