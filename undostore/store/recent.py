"""The ids of the latest snapshots, with when they were taken, so gc's grace period covers them.

A snapshot taken without a session is listed in no journal: without this list, such an id handed
to a user a minute ago could be pruned before `restore ID` runs. gc keeps every id on the list
handed out within a day (`KEEP_SECONDS`), so `undostore ops` leads back to them, also after a
journal listed it and let it go (the operation log then vouches for the day after that: see
history/reflog.py). The list is bounded and checksummed; a damaged one is dropped (gc then only
loses this extra protection).
"""

from __future__ import annotations

import marshal
import os
import time

from undostore.store.framing import CorruptFrame, read_framed, write_framed

_KIND = b"RCNT"
KEEP = 256            # always kept, whatever their age (prefixes resolve against them)
KEEP_SECONDS = 86400.0  # ... and every id handed out within this, up to MAX_KEEP
MAX_KEEP = 4096


def _path(store_path: str) -> str:
    return os.path.join(store_path, "cache", "recent")


def _load(store_path: str) -> list[tuple[float, bytes]]:
    try:
        payload = read_framed(_path(store_path), _KIND)
        entries = marshal.loads(payload) if payload is not None else []
    except (CorruptFrame, OSError, ValueError, EOFError, TypeError):
        return []
    if not isinstance(entries, list):
        return []
    return [(when, sha) for when, sha in entries
            if isinstance(when, float) and isinstance(sha, bytes) and len(sha) == 20]


def remember(store_path: str, *snapshot_ids: bytes) -> None:
    """Note that `snapshot_ids` were just handed out (the store lock is held): one write for
    them all."""
    now = time.time()
    given = set(snapshot_ids)
    entries = [e for e in _load(store_path) if e[1] not in given]
    entries += [(now, sha) for sha in dict.fromkeys(snapshot_ids)]
    young = sum(1 for when, _ in entries if when >= now - KEEP_SECONDS)
    entries = entries[-min(MAX_KEEP, max(KEEP, young)):]
    try:
        # Durable: prefixes of a plain snapshot's id resolve against this list after a cut too.
        write_framed(_path(store_path), _KIND, marshal.dumps(entries))
    except OSError:
        pass  # only a protection for gc's grace period; the snapshot itself is complete


def all_ids(store_path: str) -> set[bytes]:
    """Every snapshot id on the list, whatever its age."""
    return {sha for _, sha in _load(store_path)}


def recent_ids(store_path: str, since: float) -> set[bytes]:
    """Snapshot ids handed out at or after `since` (seconds since the epoch)."""
    return {sha for when, sha in _load(store_path) if when >= since}
