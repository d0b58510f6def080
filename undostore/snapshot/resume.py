"""A first snapshot that stops half-way keeps what it hashed.

A tree's first snapshot reads every file: minutes on a large tree, which a host may not wait for
(its hook timeout, the user quitting). While a snapshot runs with no stat cache to go by, every
`Limits.checkpoint_seconds` it publishes the pack written so far (durable, as a finished
snapshot's pack) and then appends the files it hashed since, with their stat fingerprints and
blob ids, to `<store>/cache/first-snapshot`. The next snapshot with no stat cache takes a file's
blob id from there when its stat is unchanged and the store still holds the blob (gc may have
pruned it since), instead of reading it again. The file goes once a snapshot has saved its stat
cache: from then on the stat cache vouches for every file.

The file is a header and then one marshal chunk per checkpoint, appended; a chunk cut short by a
kill ends the reading, and what came before it stands. A file modified too close to the run's
start is not recorded (racy, by the stat cache's own rule), so a change within a timestamp's
granularity is never missed.
"""

from __future__ import annotations

import marshal
import os
import sys
import time
from typing import TYPE_CHECKING, NamedTuple

from undostore.store.statcache import BLOB_ID, Entry, entry_racy, fingerprint

if TYPE_CHECKING:
    from undostore.git.packwriter import PackWriter
    from undostore.store.store import Store

FILE_NAME = "first-snapshot"
_HEADER = ("undostore first snapshot", 1, marshal.version, sys.implementation.cache_tag)


class Kept(NamedTuple):
    """What earlier tries of a first snapshot kept: each file's entry by path, how long they ran
    (seconds, summed over the tries) and when the last one checkpointed (time.time())."""

    entries: dict[str, Entry]
    seconds: float
    at: float

    @property
    def files(self) -> int:
        return len(self.entries)


NOTHING_KEPT = Kept({}, 0.0, 0.0)


def kept_path(store: Store) -> str:
    return os.path.join(store.cache_dir, FILE_NAME)


def load(path: str) -> Kept:
    """What the file at `path` holds (nothing when it is missing, unreadable, of another
    version or damaged from its start; a damaged chunk ends the reading)."""
    entries: dict[str, Entry] = {}
    seconds = at = 0.0
    try:
        with open(path, "rb") as f:
            if marshal.load(f) != _HEADER:
                return NOTHING_KEPT
            while True:
                try:
                    chunk_seconds, chunk_at, chunk = marshal.load(f)
                except EOFError:
                    break
                entries.update(chunk)
                seconds, at = chunk_seconds, chunk_at
    except (OSError, EOFError, ValueError, TypeError):
        pass   # what was read before the damage stands
    return Kept(entries, seconds, at) if entries else NOTHING_KEPT


def forget(store: Store) -> None:
    """The stat cache vouches for the tree now: what the tries kept is not needed again."""
    try:
        os.unlink(kept_path(store))
    except FileNotFoundError:
        pass


class Checkpoints:
    """A first snapshot's checkpoints: `take` answers for a file an earlier try kept, `hashed`
    notes each file this try hashed, and `due` (called between batches, with no hashing under
    way) publishes the pack and appends what was hashed since the last checkpoint."""

    def __init__(self, store: Store, writer: PackWriter, start_ns: int, every_seconds: float
                 ) -> None:
        self.store, self.writer = store, writer
        self.start_ns = start_ns
        self.every = every_seconds
        self.path = kept_path(store)
        self.kept = load(self.path)
        self.began = time.monotonic()
        self.last = self.began
        self.unsaved: dict[str, Entry] = {}
        self.taken = 0     # files answered from what earlier tries kept

    def take(self, path: str, st: os.stat_result) -> bytes | None:
        """The blob id an earlier try kept for this file, if its stat is unchanged and the store
        still holds the blob (thread-safe: only reads)."""
        entry = self.kept.entries.get(path)
        if entry is None or entry[:5] != fingerprint(st) or not self.store.has(entry[BLOB_ID]):
            return None
        self.taken += 1
        return entry[BLOB_ID]

    def hashed(self, path: str, entry: Entry) -> None:
        if not entry_racy(entry, self.start_ns):
            self.unsaved[path] = entry

    def due(self) -> None:
        now = time.monotonic()
        if now - self.last < self.every or not self.unsaved:
            return
        self.writer.checkpoint()    # durable before any entry names its blobs
        self.store.refresh()
        chunk = (self.kept.seconds + (now - self.began), time.time(), self.unsaved)
        try:
            fresh = not os.path.exists(self.path)
            with open(self.path, "ab") as f:
                if fresh:
                    marshal.dump(_HEADER, f)
                marshal.dump(chunk, f)
        except OSError:
            return   # only the next try's time is lost; this snapshot goes on
        self.unsaved = {}
        self.last = now
