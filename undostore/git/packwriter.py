"""Writing packs: new objects (snapshot), verbatim record copies (gc, repair), re-indexing.

`PackWriter` appends records to a temp file and `publish` makes a pack visible, the one rule for
snapshot and gc alike: pack fsynced, index written and fsynced, pack renamed into place, index
renamed last (a pack counts only once its index exists), folder fsynced. Packs are named by their
checksum, so publishing a pack that is already there changes nothing.
Ours, not dulwich's `write_pack_objects`: streaming multi-GB blobs, verbatim copies and
compression on a second thread. `reindex` uses dulwich to scan a pack whose index is lost.
"""

from __future__ import annotations

import hashlib
import os
import struct
import threading
import zlib
from collections.abc import Iterable
from queue import SimpleQueue

from undostore.errors import store_write_error
from undostore.fileio import TEMP_PREFIX, fsync_dir, replace_with_retry
from undostore.git.objects import CHUNK, ChangedWhileReading, object_header
from undostore.git.packfile import Pack, PackDamaged, Record, record_header
from undostore.git.packindex import IndexEntries, write_pack_index


class PackStats:
    """What a pack received so far: objects, their bytes, the pack's bytes."""

    __slots__ = ("objects", "raw_bytes", "pack_bytes")

    def __init__(self) -> None:
        self.objects = 0
        self.raw_bytes = 0
        self.pack_bytes = 0


class PackWriter:
    """Collects objects into one pack; `commit()` publishes it, `abort()` drops it.

    Small objects are compressed on a second thread (zlib releases the GIL), in batches, at most
    `MAX_IN_FLIGHT` batches at a time so memory stays bounded."""

    BATCH_OBJECTS = 64
    BATCH_BYTES = 1 << 20
    MAX_IN_FLIGHT = 8

    def __init__(self, pack_dir: str, durable: bool = True, level: int = 1) -> None:
        self.pack_dir = pack_dir
        self.durable = durable
        self.level = level
        # <store>/objects/pack: a failed write names the store (errors.store_write_error)
        self.store_path = os.path.dirname(os.path.dirname(os.path.abspath(pack_dir)))
        self.stats = PackStats()
        self._open()

    def _open(self) -> None:
        """A new temp pack to collect into (stats go on counting across packs)."""
        pack_dir = self.pack_dir
        self._tmp = os.path.join(pack_dir, f"{TEMP_PREFIX}{os.getpid()}-{os.urandom(4).hex()}.pack")
        try:
            os.makedirs(pack_dir, exist_ok=True)
            self._file = open(self._tmp, "w+b")  # noqa: SIM115 (closed in commit/abort)
        except OSError as err:
            raise store_write_error(err, self.store_path) from err
        self._write(b"PACK\x00\x00\x00\x02\x00\x00\x00\x00")
        self._offset = 12
        self._entries = IndexEntries()
        self._queued: set[bytes] = set()   # added, not yet written (on the worker's queue)
        self._batch: list[tuple[int, bytes, bytes]] = []
        self._batch_bytes = 0
        self._worker: threading.Thread | None = None
        self._queue: SimpleQueue[list[tuple[int, bytes, bytes]] | None] = SimpleQueue()
        self._slots = threading.Semaphore(self.MAX_IN_FLIGHT)
        self._error: BaseException | None = None

    def __contains__(self, sha: bytes) -> bool:
        return sha in self._queued or sha in self._entries

    def _write(self, data: bytes) -> None:
        """Append to the temp pack; the disk refusing (full, quota, read-only) is the store's
        error, never the error of the file being captured."""
        try:
            self._file.write(data)
        except OSError as err:
            raise store_write_error(err, self.store_path) from err

    def __len__(self) -> int:
        return len(self._queued) + len(self._entries)

    def add(self, type_num: int, sha: bytes, data: bytes) -> None:
        """Add one object held in memory (skipped if this pack already has it)."""
        if sha in self:
            return
        self._queued.add(sha)
        self._batch.append((type_num, sha, data))
        self._batch_bytes += len(data)
        if len(self._batch) >= self.BATCH_OBJECTS or self._batch_bytes >= self.BATCH_BYTES:
            self._send()

    def _send(self) -> None:
        batch, self._batch, self._batch_bytes = self._batch, [], 0
        if self._worker is None:
            self._worker = threading.Thread(target=self._work, name="undostore-pack",
                                            daemon=True)
            self._worker.start()
        self._slots.acquire()
        self._queue.put(batch)

    def _work(self) -> None:
        while True:
            batch = self._queue.get()
            if batch is None:
                return
            try:
                if self._error is None:
                    self._compress(batch)
            except BaseException as err:  # handed to the caller by _drain
                self._error = err
            finally:
                self._slots.release()

    def _compress(self, batch: list[tuple[int, bytes, bytes]]) -> None:
        level = self.level
        for type_num, sha, data in batch:
            record = record_header(type_num, len(data)) + zlib.compress(data, level)
            self._write(record)
            self._entries.add(sha, self._offset, zlib.crc32(record))
            self._queued.discard(sha)   # after the add: a test in between sees one of the two
            self._counted(len(data), len(record))

    def _counted(self, raw_size: int, length: int) -> None:
        self._offset += length
        self.stats.objects += 1
        self.stats.raw_bytes += raw_size
        self.stats.pack_bytes += length

    def _drain(self) -> None:
        """Write everything queued and stop the worker; re-raise what it failed with."""
        if self._worker is not None:
            self._queue.put(None)
            self._worker.join()
            self._worker = None
        if self._error is not None:
            raise self._error
        if self._batch:
            batch, self._batch, self._batch_bytes = self._batch, [], 0
            self._compress(batch)

    def _write_record(self, sha: bytes, raw_size: int, blocks: Iterable[bytes]) -> int:
        """Append one record from `blocks`; on any error roll it back and re-raise."""
        self._drain()   # the file is written from one thread at a time
        start = self._offset
        crc = 0
        length = 0
        try:
            for block in blocks:
                crc = zlib.crc32(block, crc)
                self._write(block)
                length += len(block)
        except BaseException:
            try:
                self._file.seek(start)
                self._file.truncate()
            except OSError:
                pass   # the whole pack is dropped by abort() anyway
            raise
        self._entries.add(sha, start, crc)
        self._counted(raw_size, length)
        return crc

    def add_stream(self, type_num: int, sha: bytes, size: int, chunks: Iterable[bytes]) -> None:
        """Add a large object from chunks, in constant memory. `chunks` must total `size` bytes
        and hash to `sha` (checked: a file that changed since it was hashed is refused)."""
        if sha not in self:
            self._write_record(sha, size, _deflated(type_num, sha, size, chunks, self.level))

    def copy(self, pack: Pack, record: Record, raw_size: int = 0) -> None:
        """Copy a whole record verbatim; RecordDamaged (nothing written) if its CRC is off."""
        if record.sha not in self:
            self._write_record(record.sha, raw_size, pack.copy(record))

    def commit(self) -> str | None:
        """Finish and publish the pack; returns its base path, None if it is empty. On any
        failure (a full disk, Ctrl-C) nothing of it stays: no temp pack, no index-less pack.
        The writer's per-object bookkeeping is let go either way (only `stats` stays): what
        comes after a snapshot's commit, its stat cache save, is its peak."""
        self._drain()
        try:
            if not self._entries:
                self.abort()
                return None
            try:
                return self._finish()
            except BaseException as err:
                self.abort()
                if isinstance(err, OSError):
                    raise store_write_error(err, self.store_path) from err
                raise
        finally:
            self._entries = IndexEntries()
            self._queued = set()

    def checkpoint(self) -> str | None:
        """Publish what was added so far as a pack of its own (as `commit` does, durable when
        the writer is) and go on collecting into a new one: a long first snapshot stopped later
        keeps it (snapshot/resume.py). Returns the published pack's base path (None: empty)."""
        published = self.commit()
        self._open()
        return published

    def _finish(self) -> str:
        f = self._file
        f.seek(8)
        f.write(struct.pack(">L", len(self._entries)))
        f.flush()
        f.seek(0)   # the trailer is the SHA-1 of everything before it, count included
        digest = hashlib.sha1()
        while block := f.read(CHUNK):
            digest.update(block)
        checksum = digest.digest()
        f.seek(0, os.SEEK_END)
        f.write(checksum)
        f.flush()
        if self.durable:
            os.fsync(f.fileno())
        f.close()
        return publish(self._tmp, self.pack_dir, self._entries, checksum, self.durable)

    def abort(self) -> None:
        if self._worker is not None:
            self._error = self._error or ChangedWhileReading()  # skip what is still queued
            self._queue.put(None)
            self._worker.join()
            self._worker = None
        try:
            self._file.close()
        except OSError:
            pass   # flushing onto a full disk fails again: the file goes anyway
        finally:
            _unlink(self._tmp)


def _deflated(type_num: int, sha: bytes, size: int, chunks: Iterable[bytes],
              level: int) -> Iterable[bytes]:
    yield record_header(type_num, size)
    compressor = zlib.compressobj(level)
    check = hashlib.sha1(object_header(type_num, size))
    got = 0
    for chunk in chunks:
        got += len(chunk)
        check.update(chunk)
        if out := compressor.compress(chunk):
            yield out
    if got != size or check.digest() != sha:
        raise ChangedWhileReading()
    yield compressor.flush()


def publish(tmp_pack: str, pack_dir: str, entries: IndexEntries, checksum: bytes,
            durable: bool = True) -> str:
    """Make the finished, fsynced pack at `tmp_pack` visible under its checksum's name with an
    index for `entries`; returns its base path."""
    base = os.path.join(pack_dir, f"pack-{checksum.hex()}")
    if os.path.exists(base + ".pack") and os.path.exists(base + ".idx"):
        _unlink(tmp_pack)   # already there (maybe open elsewhere, which Windows would refuse)
        return base
    write_index(base, entries, checksum, durable, pack_from=tmp_pack)
    return base


def write_index(base: str, entries: IndexEntries, checksum: bytes, durable: bool = True,
                pack_from: str | None = None) -> None:
    """Write `base`.idx (after moving `pack_from` to `base`.pack): temp, fsync, rename."""
    idx_tmp = os.path.join(os.path.dirname(base),
                           f"{TEMP_PREFIX}{os.getpid()}-{os.urandom(4).hex()}.idx")
    placed = False
    try:
        with open(idx_tmp, "wb") as idx:
            write_pack_index(idx, entries, checksum)
            idx.flush()
            if durable:
                os.fsync(idx.fileno())
        if pack_from is not None:
            replace_with_retry(pack_from, base + ".pack")
            placed = True
        replace_with_retry(idx_tmp, base + ".idx")
    except BaseException:
        if placed and not os.path.exists(base + ".idx"):
            _unlink(base + ".pack")   # an index-less pack of ours is of no use to anyone
        raise
    finally:
        _unlink(idx_tmp)
    if durable:
        fsync_dir(os.path.dirname(base))


def reindex(pack_path: str) -> str:
    """Rebuild the index of a `.pack` whose index is lost or damaged (dulwich reads every
    object and checks the pack's checksum); returns the base path. PackDamaged if it fails."""
    from dulwich.object_format import SHA1
    from dulwich.pack import PackData

    try:
        data = PackData(pack_path, object_format=SHA1)
        try:
            data.check()
            entries = IndexEntries((bytes(sha), offset, crc)
                                   for sha, offset, crc in data.sorted_entries())
            checksum = bytes(data.get_stored_checksum())
        finally:
            data.close()
    except Exception as err:   # dulwich raises its own errors, zlib's, ValueError, ...
        raise PackDamaged(f"cannot be re-indexed: {err}") from None
    base = pack_path[:-5]
    write_index(base, entries, checksum)
    return base


def _unlink(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass
