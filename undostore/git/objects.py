"""Git objects: hashing blobs, encoding trees, and writing one pack per snapshot.

undostore stores git objects (SHA-1), so a snapshot id is exactly git's tree id. New objects of one
snapshot go into a single pack (a few MB instead of 20,000 loose 4 KB files): records are zlib
level 1, the pack is fsynced once, then its version-2 index. A pack becomes visible only when its
`.idx` is renamed into place, so a crash leaves an orphan `.pack` that no reader trusts and `gc`
removes.

Reading is dulwich's job (`Store.read` through `DiskObjectStore`), except the membership test on
the snapshot's hot path (`PackIndexSet`), which binary-searches the `.idx` files through mmap, so
a snapshot never imports dulwich at all (35-40 ms of start-up).
"""

from __future__ import annotations

import bisect
import hashlib
import mmap
import os
import struct
import threading
import zlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from queue import SimpleQueue

from undostore.errors import store_write_error
from undostore.store.atomic import TEMP_PREFIX, fsync_dir

TREE = 2
BLOB = 3
TYPE_NAMES = {1: b"commit", TREE: b"tree", BLOB: b"blob", 4: b"tag"}

MODE_FILE = 0o100644
MODE_EXEC = 0o100755
MODE_LINK = 0o120000
MODE_TREE = 0o040000
MODE_BYTES = {MODE_FILE: b"100644", MODE_EXEC: b"100755", MODE_LINK: b"120000",
              MODE_TREE: b"40000"}

CHUNK = 1 << 20


def object_header(type_num: int, size: int) -> bytes:
    return TYPE_NAMES[type_num] + b" %d\x00" % size


def hash_object(type_num: int, data: bytes) -> bytes:
    """The raw 20-byte git id of an object."""
    h = hashlib.sha1(object_header(type_num, len(data)))
    h.update(data)
    return h.digest()


def fd_chunks(fd: int) -> Iterator[bytes]:
    """What is left to read of an open file, CHUNK bytes at a time."""
    while block := os.read(fd, CHUNK):
        yield block


def hash_blob_fd(fd: int, size: int) -> bytes:
    """The git blob id of an open file read to its end, streaming; ChangedWhileReading if it
    did not hold `size` bytes (it changed since it was stat'ed)."""
    digest = hashlib.sha1(object_header(BLOB, size))
    got = 0
    for block in fd_chunks(fd):
        got += len(block)
        digest.update(block)
    if got != size:
        raise ChangedWhileReading()
    return digest.digest()


def tree_sort_key(entry: tuple[int, bytes, bytes]) -> bytes:
    mode, name, _ = entry
    return name + b"/" if mode == MODE_TREE else name


def encode_tree(entries: Iterable[tuple[int, bytes, bytes]]) -> bytes:
    """A tree object's body from (mode, name, raw id) entries, in git's order."""
    return b"".join(
        MODE_BYTES[mode] + b" " + name + b"\x00" + sha
        for mode, name, sha in sorted(entries, key=tree_sort_key))


def decode_tree(body: bytes) -> list[tuple[int, bytes, bytes]]:
    """(mode, name, raw id) entries of a tree object body."""
    out: list[tuple[int, bytes, bytes]] = []
    pos = 0
    end = len(body)
    while pos < end:
        space = body.index(b" ", pos)
        nul = body.index(b"\x00", space)
        mode = int(body[pos:space], 8)
        out.append((mode, body[space + 1:nul], body[nul + 1:nul + 21]))
        pos = nul + 21
    return out


# --- pack indexes: the membership test of the hot path -------------------------------------------

IDX_MAGIC = b"\xfftOc\x00\x00\x00\x02"   # version-2 pack index
IDX_NAMES_AT = 8 + 256 * 4
_LIST_AFTER = 64     # lookups in one index before its names are copied into a list


class PackIndexFile:
    """A read-only view of one version-2 `.idx` file: the one binary search over object ids
    that the snapshot's membership test, restore's reads and diff's abbreviations share."""

    def __init__(self, path: str) -> None:
        with open(path, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            self._map = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) if size else b""
        data = self._map
        if len(data) < IDX_NAMES_AT + 40 or data[:8] != IDX_MAGIC:
            raise ValueError(f"{path}: not a version 2 pack index")
        self._fanout = struct.unpack_from(">256L", data, 8)
        self.count = self._fanout[255]
        self._offsets_at = IDX_NAMES_AT + self.count * 24     # after names and CRCs
        self._large_at = self._offsets_at + self.count * 4
        self._names: list[bytes] | None = None
        self._lookups = 0
        self.path = path

    def search(self, sha: bytes) -> tuple[int, bool]:
        """(position of `sha`, True) if the index lists it, else (where it would go, False)."""
        first = sha[0]
        lo = self._fanout[first - 1] if first else 0
        hi = self._fanout[first]
        if lo >= hi:
            return lo, False
        self._lookups += 1
        # Copying the ids into a list costs O(index size); it pays only after many lookups
        # (a restore's thousands, not a diff's hundreds in a 100,000-object pack).
        if self._names is None and self._lookups > max(_LIST_AFTER, self.count // 16):
            self._names = list(self.names())
        if self._names is not None:
            at = bisect.bisect_left(self._names, sha, lo, hi)
            return at, at < hi and self._names[at] == sha
        data = self._map
        while lo < hi:
            mid = (lo + hi) // 2
            at = IDX_NAMES_AT + mid * 20
            probe = data[at:at + 20]
            if probe < sha:
                lo = mid + 1
            elif probe > sha:
                hi = mid
            else:
                return mid, True
        return lo, False

    def __contains__(self, sha: bytes) -> bool:
        return self.search(sha)[1]

    def position(self, sha: bytes) -> int | None:
        position, found = self.search(sha)
        return position if found else None

    def name_at(self, position: int) -> bytes:
        at = IDX_NAMES_AT + position * 20
        return bytes(self._map[at:at + 20])

    def offset_at(self, position: int) -> int:
        """Where the record at index `position` starts in the pack."""
        (value,) = struct.unpack_from(">L", self._map, self._offsets_at + position * 4)
        if value & 0x80000000:
            (value,) = struct.unpack_from(">Q", self._map,
                                          self._large_at + (value & 0x7FFFFFFF) * 8)
        return value

    def names(self) -> Iterator[bytes]:
        for i in range(self.count):
            yield self.name_at(i)

    def close(self) -> None:
        if isinstance(self._map, mmap.mmap):
            self._map.close()


class PackIndexSet:
    """Membership over every complete pack in a pack folder (a pack counts once its idx exists)."""

    def __init__(self, pack_dir: str) -> None:
        self.pack_dir = pack_dir
        self._indexes: dict[str, PackIndexFile] = {}
        self.refresh()

    def refresh(self) -> None:
        try:
            names = os.listdir(self.pack_dir)
        except FileNotFoundError:
            names = []
        wanted = {n for n in names if n.endswith(".idx") and n[:-4] + ".pack" in names}
        for gone in set(self._indexes) - wanted:
            self._indexes.pop(gone).close()
        for name in sorted(wanted - set(self._indexes)):
            try:
                self._indexes[name] = PackIndexFile(os.path.join(self.pack_dir, name))
            except (OSError, ValueError):
                continue  # unreadable index: its objects count as absent, so they are rewritten

    def __contains__(self, sha: bytes) -> bool:
        return any(sha in index for index in self._indexes.values())

    def indexes(self) -> list[PackIndexFile]:
        return list(self._indexes.values())

    def pack_names(self) -> set[str]:
        """Base names (`pack-<sha>`) of the complete packs."""
        return {name[:-4] for name in self._indexes}

    def close(self) -> None:
        for index in self._indexes.values():
            index.close()
        self._indexes.clear()


# --- writing -------------------------------------------------------------------------------


def pack_record_header(type_num: int, size: int) -> bytes:
    byte = (type_num << 4) | (size & 0x0F)
    size >>= 4
    out = bytearray()
    while size:
        out.append(byte | 0x80)
        byte = size & 0x7F
        size >>= 7
    out.append(byte)
    return bytes(out)


@dataclass
class PackStats:
    objects: int = 0
    raw_bytes: int = 0
    pack_bytes: int = 0


class PackWriter:
    """Collects new objects into one pack; `commit()` makes them visible, `abort()` drops them.

    Small objects are compressed on a second thread: zlib releases the GIL, so compression (half
    of a first snapshot's time) overlaps with reading and hashing the next files. They go over in
    batches (a hand-off per object would cost more than compressing it), at most
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
        self._tmp = os.path.join(pack_dir, f"{TEMP_PREFIX}{os.getpid()}-{os.urandom(4).hex()}.pack")
        try:
            os.makedirs(pack_dir, exist_ok=True)
            self._file = open(self._tmp, "w+b")  # noqa: SIM115 (closed in commit/abort)
        except OSError as err:
            raise store_write_error(err, self.store_path) from err
        self._write(b"PACK\x00\x00\x00\x02\x00\x00\x00\x00")
        self._offset = 12
        self._entries: list[tuple[bytes, int, int]] = []
        self._seen: set[bytes] = set()
        self.stats = PackStats()
        self._batch: list[tuple[int, bytes, bytes]] = []
        self._batch_bytes = 0
        self._worker: threading.Thread | None = None
        self._queue: SimpleQueue[list[tuple[int, bytes, bytes]] | None] = SimpleQueue()
        self._slots = threading.Semaphore(self.MAX_IN_FLIGHT)
        self._error: BaseException | None = None

    def __contains__(self, sha: bytes) -> bool:
        return sha in self._seen

    def _write(self, data: bytes) -> None:
        """Append to the temp pack; the disk refusing (full, quota, read-only) is the store's
        error, never the error of the file being captured."""
        try:
            self._file.write(data)
        except OSError as err:
            raise store_write_error(err, self.store_path) from err

    def __len__(self) -> int:
        return len(self._seen)

    def add(self, type_num: int, sha: bytes, data: bytes) -> None:
        """Add one object held in memory (skipped if this pack already has it)."""
        if sha in self._seen:
            return
        self._seen.add(sha)
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
            record = pack_record_header(type_num, len(data)) + zlib.compress(data, level)
            self._append(sha, record, len(data))

    def _drain(self) -> None:
        """Write everything queued (the last partial batch on this thread) and stop the
        worker; re-raise what it failed with."""
        if self._worker is not None:
            self._queue.put(None)
            self._worker.join()
            self._worker = None
        if self._error is not None:
            raise self._error
        if self._batch:
            batch, self._batch, self._batch_bytes = self._batch, [], 0
            self._compress(batch)

    def add_stream(self, type_num: int, sha: bytes, size: int, chunks: Iterable[bytes]) -> None:
        """Add a large object from chunks, in constant memory. `chunks` must total `size` bytes,
        and must hash to `sha` (checked: a file that changed since it was hashed is refused)."""
        if sha in self._seen:
            return
        self._drain()  # the file is written from one thread at a time
        header = pack_record_header(type_num, size)
        start = self._offset
        crc = zlib.crc32(header)
        self._write(header)
        written = len(header)
        compressor = zlib.compressobj(self.level)
        check = hashlib.sha1(object_header(type_num, size))
        got = 0
        for chunk in chunks:
            got += len(chunk)
            check.update(chunk)
            out = compressor.compress(chunk)
            if out:
                crc = zlib.crc32(out, crc)
                self._write(out)
                written += len(out)
        tail = compressor.flush()
        crc = zlib.crc32(tail, crc)
        self._write(tail)
        written += len(tail)
        if got != size or check.digest() != sha:
            # Roll the half-written record back; the caller reports the changed file.
            self._file.seek(start)
            self._file.truncate()
            raise ChangedWhileReading()
        self._offset += written
        self._entries.append((sha, start, crc & 0xFFFFFFFF))
        self._seen.add(sha)
        self.stats.objects += 1
        self.stats.raw_bytes += size
        self.stats.pack_bytes += written

    def _append(self, sha: bytes, record: bytes, raw_size: int) -> None:
        self._write(record)
        self._entries.append((sha, self._offset, zlib.crc32(record) & 0xFFFFFFFF))
        self._offset += len(record)
        self._seen.add(sha)
        self.stats.objects += 1
        self.stats.raw_bytes += raw_size
        self.stats.pack_bytes += len(record)

    def commit(self) -> str | None:
        """Finish the pack and its index; returns the pack's base name, None if empty. On any
        failure (a full disk, Ctrl-C) nothing of it stays: no temp pack, no index-less pack."""
        self._drain()
        if not self._entries:
            self.abort()
            return None
        placed: dict[str, str] = {}
        try:
            return self._finish(placed)
        except BaseException as err:
            _remove_unfinished(placed)
            if isinstance(err, OSError):
                raise store_write_error(err, self.store_path) from err
            raise

    def _finish(self, placed: dict[str, str]) -> str:
        f = self._file
        f.seek(8)
        f.write(struct.pack(">L", len(self._entries)))
        f.flush()
        # The trailer is the SHA-1 of everything before it; the count was patched in last.
        f.seek(0)
        digest = hashlib.sha1()
        while True:
            block = f.read(CHUNK)
            if not block:
                break
            digest.update(block)
        checksum = digest.digest()
        f.seek(0, os.SEEK_END)
        f.write(checksum)
        f.flush()
        if self.durable:
            os.fsync(f.fileno())
        f.close()
        base = os.path.join(self.pack_dir, f"pack-{checksum.hex()}")
        os.replace(self._tmp, base + ".pack")
        placed["pack"] = base + ".pack"
        idx_tmp = placed["idx_tmp"] = base + f".{TEMP_PREFIX}idx"
        with open(idx_tmp, "wb") as idx:
            idx.write(encode_pack_index(self._entries, checksum))
            idx.flush()
            if self.durable:
                os.fsync(idx.fileno())
        os.replace(idx_tmp, base + ".idx")
        if self.durable:
            fsync_dir(self.pack_dir)
        return base

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
            try:
                os.unlink(self._tmp)
            except OSError:
                pass


def _remove_unfinished(placed: dict[str, str]) -> None:
    """After a failed commit: the index's temp file, and the pack if its index never arrived
    (an index-less pack is of no use to anyone and would only wait for gc)."""
    pack = placed.get("pack")
    doomed = [placed.get("idx_tmp")]
    if pack is not None and not os.path.exists(pack[:-5] + ".idx"):
        doomed.append(pack)
    for path in doomed:
        if path is not None:
            try:
                os.unlink(path)
            except OSError:
                pass


def encode_pack_index(entries: list[tuple[bytes, int, int]], pack_checksum: bytes) -> bytes:
    """A version-2 `.idx` for (raw id, offset, crc32) entries.

    Written here rather than by `dulwich.pack.write_pack_index` only because importing
    dulwich.pack costs 35 ms, a third of a one-file snapshot; the tests check the result with
    dulwich's reader and with `git verify-pack`."""
    entries = sorted(entries)
    fanout = [0] * 256
    for sha, _, _ in entries:
        fanout[sha[0]] += 1
    running = 0
    for i in range(256):
        running += fanout[i]
        fanout[i] = running
    large: list[int] = []
    offsets = bytearray()
    for _, offset, _ in entries:
        if offset < 0x80000000:
            offsets += struct.pack(">L", offset)
        else:  # packs over 2 GiB: the offset lives in the 64-bit table
            offsets += struct.pack(">L", 0x80000000 | len(large))
            large.append(offset)
    body = b"".join((
        IDX_MAGIC, struct.pack(">256L", *fanout),
        b"".join(sha for sha, _, _ in entries),
        b"".join(struct.pack(">L", crc) for _, _, crc in entries),
        bytes(offsets),
        b"".join(struct.pack(">Q", offset) for offset in large),
        pack_checksum,
    ))
    return body + hashlib.sha1(body).digest()


class ChangedWhileReading(Exception):
    """The bytes read for an object no longer hash to the id computed moments before."""
