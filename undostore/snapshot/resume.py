"""A first snapshot that stops half-way keeps what it hashed.

A tree's first snapshot reads every file: minutes on a large tree, which a host may not wait for
(its hook timeout, the user quitting). While a snapshot runs with no stat cache to go by, it
appends each file it hashes (path, stat fingerprint, blob id) to `<store>/cache/first-snapshot`,
and every `Limits.checkpoint_s` it publishes the pack written so far (durable, as a finished
snapshot's pack). The next snapshot with no stat cache takes a file's blob id from there when its
stat is unchanged and the store holds the blob, instead of reading the file again. The store
holding the blob is what makes a record usable: a blob is in the store only once its pack was
published, and a published pack is durable; a record whose pack never was (the try was killed
before its checkpoint) names a blob the store lacks, and the file is read again. The file goes
once a snapshot has saved its stat cache: from then on the stat cache vouches for every file.

The file is a header line, then items appended as they come: a record (the path's length and
bytes, then the stat cache's own packed entry), or at each checkpoint the seconds of reading so
far. A tail cut short by a kill ends the reading; what came before it stands. A snapshot holds
no more than `FLUSH_BYTES` of records before it writes them, and a resumed one ~100 bytes for
each file kept, each let go once taken. A file modified too close to the run's start is not
recorded (racy, by the stat cache's own rule), so a change within a timestamp's granularity is
never missed.
"""

from __future__ import annotations

import os
import struct
import time
from typing import TYPE_CHECKING, NamedTuple

from undostore.store.statcache import (
    ENTRY,
    FINGERPRINT,
    Entry,
    entry_racy,
    fingerprint,
    packed_blob_id,
)

if TYPE_CHECKING:
    from undostore.git.packwriter import PackWriter
    from undostore.store.store import Store

FILE_NAME = "first-snapshot"
_HEADER = b"undostore first snapshot 3\n"
_RECORD = b"R"                   # then the path's length, the path, the packed entry
_RECORD_HEAD = struct.Struct("<cH")
_SECONDS = b"T"                  # then the seconds of reading so far
_SECONDS_ITEM = struct.Struct("<cd")
FLUSH_BYTES = 64 << 10           # records are written once this many bytes wait


class Kept(NamedTuple):
    """What earlier tries of a first snapshot kept: each file's packed entry (statcache.ENTRY) by
    path, and how long they ran (seconds of reading, summed over the tries)."""

    entries: dict[str, bytes]
    seconds: float

    @property
    def files(self) -> int:
        return len(self.entries)


def kept_path(store: Store) -> str:
    return os.path.join(store.cache_dir, FILE_NAME)


def load(path: str) -> Kept:
    """What the file at `path` holds (nothing when it is missing, unreadable, of another
    version or damaged from its start; a damaged item ends the reading)."""
    entries: dict[str, bytes] = {}
    seconds = 0.0
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError:
        return Kept(entries, seconds)
    if not data.startswith(_HEADER):
        return Kept(entries, seconds)
    offset, end, size = len(_HEADER), len(data), ENTRY.size
    try:
        while offset < end:
            kind = data[offset:offset + 1]
            if kind == _RECORD:
                _, length = _RECORD_HEAD.unpack_from(data, offset)
                offset += _RECORD_HEAD.size
                if offset + length + size > end:
                    break   # cut short by a kill
                path_bytes = data[offset:offset + length]
                entries[path_bytes.decode("utf-8", "surrogateescape")] = \
                    data[offset + length:offset + length + size]
                offset += length + size
            elif kind == _SECONDS:
                _, seconds = _SECONDS_ITEM.unpack_from(data, offset)
                offset += _SECONDS_ITEM.size
            else:
                break   # zeros a power cut left, or damage: what came before stands
    except struct.error:
        pass
    return Kept(entries, seconds if entries else 0.0)


def usable(kept: Kept, store: Store) -> Kept:
    """`kept` without the records whose blob the store lacks (their pack was never published:
    the try was stopped before its checkpoint, or gc pruned them since)."""
    entries = {path: packed for path, packed in kept.entries.items()
               if len(packed) == ENTRY.size and store.has(packed_blob_id(packed))}
    return kept._replace(entries=entries)


def _record(path: str, entry: Entry) -> bytes:
    name = path.encode("utf-8", "surrogateescape")
    return _RECORD_HEAD.pack(_RECORD, len(name)) + name + ENTRY.pack(*entry)


def forget(store: Store) -> None:
    """The stat cache vouches for the tree now: what the tries kept is not needed again."""
    try:
        os.unlink(kept_path(store))
    except FileNotFoundError:
        pass


class Checkpoints:
    """A first snapshot's keeping: `take` answers for a file an earlier try kept, `hashed`
    records each file this try hashed, and `due` (called between batches, with no hashing under
    way) publishes the pack every `every_seconds`."""

    def __init__(self, store: Store, writer: PackWriter, start_ns: int, every_seconds: float
                 ) -> None:
        self.store, self.writer = store, writer
        self.start_ns = start_ns
        self.every = every_seconds
        self.path = kept_path(store)
        self.kept = load(self.path)
        self.began = time.monotonic()
        self.last = self.began
        self.unwritten = bytearray()   # records not yet appended to the file
        self.failed = False            # the file could not be written: keep nothing more

    def take(self, path: str, st: os.stat_result) -> bytes | None:
        """The blob id an earlier try kept for this file, if its stat is unchanged and the store
        holds the blob (thread-safe: one pop from a dict). Each entry is let go once asked."""
        packed = self.kept.entries.pop(path, None)
        if (packed is None or len(packed) != ENTRY.size
                or packed[:FINGERPRINT.size] != FINGERPRINT.pack(*fingerprint(st))):
            return None
        blob = packed_blob_id(packed)
        return blob if self.store.has(blob) else None

    def hashed(self, path: str, entry: Entry) -> None:
        """Record a file this try hashed (the hashing's one thread calls it)."""
        if not self.failed and not entry_racy(entry, self.start_ns):
            self.unwritten += _record(path, entry)
            if len(self.unwritten) >= FLUSH_BYTES:
                self._append(b"")

    def due(self) -> None:
        """Every `every_seconds`: publish the pack, so the blobs recorded so far are kept."""
        now = time.monotonic()
        if now - self.last < self.every:
            return
        self.last = now
        # Not followed by a store refresh: mapping the new packs' indexes raised the first
        # snapshot's peak memory (docs/design.md); a blob met again after a checkpoint is only
        # written once more (gc's repack drops the copy).
        self.writer.checkpoint()
        self._append(_SECONDS_ITEM.pack(_SECONDS, self.kept.seconds + (now - self.began)))

    def _append(self, then: bytes) -> None:
        if self.failed:
            return
        try:
            with open(self.path, "ab") as f:
                if f.tell() == 0:
                    f.write(_HEADER)
                f.write(self.unwritten)
                f.write(then)
        except OSError:
            self.failed = True   # only the next try's time is lost; this snapshot goes on
        self.unwritten = bytearray()
