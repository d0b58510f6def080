"""Version-2 pack indexes (`.idx`): the one parser and the one writer.

An index lists, sorted by id, each object's id, the CRC-32 of its pack record and the record's
offset, then the pack's checksum and its own. It is mmapped and parsed lazily: a membership test
reads a few fan-out entries and names; a census reads only the header.
Writer ours, not `dulwich.pack.write_pack_index_v2`: importing dulwich.pack costs ~10 ms inside
undostore, on every snapshot that writes a pack (the tests check ours against dulwich and git).
"""

from __future__ import annotations

import bisect
import hashlib
import mmap
import os
import struct
from collections.abc import Iterable, Iterator
from typing import BinaryIO

IDX_MAGIC = b"\xfftOc\x00\x00\x00\x02"
IDX_NAMES_AT = 8 + 256 * 4
_LIST_AFTER = 64     # lookups in one index before its names are copied into a list
# What this process already learned of an index file (path, size, mtime, inode): packs are
# never rewritten in place, and a hook call opens the same ones in several readers.
_CHECKED: dict[tuple[str, int, int, int], bool] = {}   # index checksums already verified
_MAX_OFFSETS: dict[tuple[str, int, int, int], int] = {}   # where each one's last record starts


def index_facts() -> list[list[object]]:
    """What this process learned of the index files it read, newest last: [path, size, mtime
    (ns), inode, whether its checksum held (None: not checked), where its last record starts
    (-1: not looked)]. The resident process hands them to the calls it forks next
    (`adopt_index_facts`), which would each check every pack of the store again."""
    keys = dict.fromkeys([*_CHECKED, *_MAX_OFFSETS])
    return [[*key, _CHECKED.get(key), _MAX_OFFSETS.get(key, -1)] for key in keys]


def adopt_index_facts(facts: object) -> int:
    """Take `facts` (`index_facts` of a process forked from this one) as this process's own,
    for the index files still there unchanged (each stat-ed here: size, time, inode), and
    forget every other; a fact that is not well formed is skipped, and only a checksum that
    held is taken. How many files' facts are kept."""
    _CHECKED.clear()
    _MAX_OFFSETS.clear()
    for fact in facts if isinstance(facts, list) else ():
        if not (isinstance(fact, list) and len(fact) == 6 and isinstance(fact[0], str)
                and all(type(v) is int for v in (*fact[1:4], fact[5]))):
            continue
        path, size, mtime_ns, inode, checked, top = fact
        try:
            st = os.stat(path)
        except OSError:
            continue
        if (st.st_size, st.st_mtime_ns, st.st_ino) != (size, mtime_ns, inode):
            continue
        key = (path, size, mtime_ns, inode)
        if checked is True:
            _CHECKED[key] = True
        if top >= 0:
            _MAX_OFFSETS[key] = top
    return len({*_CHECKED, *_MAX_OFFSETS})


class PackIndexFile:
    """A read-only view of one `.idx` file; ValueError if it is not a well-formed v2 index."""

    def __init__(self, path: str) -> None:
        with open(path, "rb") as f:
            st = os.fstat(f.fileno())
            size = st.st_size
            self._map = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) if size else b""
        self._key = (path, size, st.st_mtime_ns, st.st_ino)
        data = self._map
        try:
            if len(data) < IDX_NAMES_AT + 40 or data[:8] != IDX_MAGIC:
                raise ValueError(f"{path}: not a version 2 pack index")
            self._fanout = struct.unpack_from(">256L", data, 8)
            self.count = self._fanout[255]
            self._crcs_at = IDX_NAMES_AT + self.count * 20
            self._offsets_at = self._crcs_at + self.count * 4
            self._large_at = self._offsets_at + self.count * 4
            if len(data) < self._large_at + 40 or list(self._fanout) != sorted(self._fanout):
                raise ValueError(f"{path}: truncated or malformed pack index")
        except BaseException:
            self.close()
            raise
        self._names: list[bytes] | None = None
        self._lookups = 0
        self.path = path

    @property
    def pack_checksum(self) -> bytes:
        """The copy of the pack's trailer that the index was written for."""
        return bytes(self._map[-40:-20])

    def checksum_ok(self) -> bool:
        """Whether the index's own trailer matches its bytes (reads the whole index once per
        process: ~3 ms for 100,000 objects)."""
        key = self._key
        if key not in _CHECKED:
            view = memoryview(self._map)
            body = view[:-20]
            try:
                _CHECKED[key] = hashlib.sha1(body).digest() == self._map[-20:]
            finally:
                body.release()
                view.release()
        return _CHECKED[key]

    def search(self, sha: bytes) -> tuple[int, bool]:
        """(position of `sha`, True) if the index lists it, else (where it would go, False)."""
        first = sha[0]
        lo = self._fanout[first - 1] if first else 0
        hi = self._fanout[first]
        if lo >= hi:
            return lo, False
        self._lookups += 1
        # Copying the ids into a list costs O(index size) in time and memory: it pays only after
        # many lookups (docs/design.md, "Figures behind constants").
        if self._names is None and self._lookups > max(_LIST_AFTER, self.count // 4):
            self.name_list()
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

    def crc_at(self, position: int) -> int:
        return struct.unpack_from(">L", self._map, self._crcs_at + position * 4)[0]

    def offset_at(self, position: int) -> int:
        """Where the record at index `position` starts in the pack."""
        (value,) = struct.unpack_from(">L", self._map, self._offsets_at + position * 4)
        if value & 0x80000000:
            (value,) = struct.unpack_from(">Q", self._map,
                                          self._large_at + (value & 0x7FFFFFFF) * 8)
        return value

    def max_offset(self) -> int:
        """Where the last record starts (0 for an empty index), without listing them all (once
        per process and index file)."""
        if not self.count:
            return 0
        top = _MAX_OFFSETS.get(self._key)
        if top is None:
            top = max(struct.unpack_from(f">{self.count}L", self._map, self._offsets_at))
            if top & 0x80000000:
                top = max(self.offsets())
            _MAX_OFFSETS[self._key] = top
        return top

    def offsets(self) -> list[int]:
        """Every record's offset, in index (id) order."""
        small = struct.unpack_from(f">{self.count}L", self._map, self._offsets_at)
        if not any(v & 0x80000000 for v in small):
            return list(small)
        return [self.offset_at(i) for i in range(self.count)]

    def name_list(self) -> list[bytes]:
        """Every id the index lists, sorted (copied once, then kept)."""
        if self._names is None:
            blob = self._map[IDX_NAMES_AT:self._crcs_at]
            self._names = [blob[i:i + 20] for i in range(0, len(blob), 20)]
        return self._names

    def names(self) -> Iterator[bytes]:
        return iter(self.name_list())

    def crcs(self) -> tuple[int, ...]:
        return struct.unpack_from(f">{self.count}L", self._map, self._crcs_at)

    def close(self) -> None:
        if isinstance(self._map, mmap.mmap):
            self._map.close()


_ENTRY = struct.Struct(">20sQL")   # id, offset, crc32: big-endian, so records sort as ids


class IndexEntries:
    """The (raw id, offset, crc32) of each record a pack being written holds, packed 32 bytes
    each into 256 buckets by the id's first byte, with a bit filter over the ids for membership
    tests. A tuple per object and a set of ids held ~230 bytes per object; this holds ~34, and
    the index's sort needs only one bucket's entries as objects at a time."""

    __slots__ = ("_buckets", "_count", "_filter")

    def __init__(self, entries: Iterable[tuple[bytes, int, int]] = ()) -> None:
        self._buckets = [bytearray() for _ in range(256)]
        self._count = 0
        # (bits, mask), replaced whole when it grows: one thread adds, others may test.
        self._filter = (bytearray(_FILTER_MIN_BYTES), _FILTER_MIN_BYTES * 8 - 1)
        for sha, offset, crc in entries:
            self.add(sha, offset, crc)

    def add(self, sha: bytes, offset: int, crc: int) -> None:
        self._buckets[sha[0]] += _ENTRY.pack(sha, offset, crc)
        self._count += 1
        if self._count * _FILTER_BITS_PER_ID > len(self._filter[0]) * 8:
            self._grow()
        else:
            _mark(self._filter, sha)

    def __contains__(self, sha: bytes) -> bool:
        bits, mask = self._filter
        for at in _filter_positions(sha, mask):
            if not bits[at >> 3] & (1 << (at & 7)):
                return False
        # Maybe: look in the id's bucket (rare unless it is there: ~1 in 50 at the size kept).
        bucket = self._buckets[sha[0]]
        at = bucket.find(sha)
        while at >= 0:
            if at % _ENTRY.size == 0:
                return True
            at = bucket.find(sha, at + 1)
        return False

    def __len__(self) -> int:
        return self._count

    def _grow(self) -> None:
        size = len(self._filter[0]) * 2
        grown = (bytearray(size), size * 8 - 1)
        for bucket in self._buckets:
            for (sha, _, _) in _ENTRY.iter_unpack(bucket):
                _mark(grown, sha)
        self._filter = grown

    def sorted_buckets(self) -> list[bytearray]:
        """The buckets with their entries in id order (sorted in place, once)."""
        size = _ENTRY.size
        for i, bucket in enumerate(self._buckets):
            if len(bucket) > size:
                self._buckets[i] = bytearray(b"".join(
                    sorted(bytes(bucket[j:j + size]) for j in range(0, len(bucket), size))))
        return self._buckets


_FILTER_MIN_BYTES = 1 << 12
_FILTER_BITS_PER_ID = 8       # three positions per id: ~3% of absent ids look in a bucket


def _mark(bit_filter: tuple[bytearray, int], sha: bytes) -> None:
    bits, mask = bit_filter
    for at in _filter_positions(sha, mask):
        bits[at >> 3] |= 1 << (at & 7)


def _filter_positions(sha: bytes, mask: int) -> tuple[int, int, int]:
    """Three bit positions for an id (its bytes are uniform; the first picks the bucket)."""
    return (int.from_bytes(sha[1:5], "little") & mask, int.from_bytes(sha[5:9], "little") & mask,
            int.from_bytes(sha[9:13], "little") & mask)


def pack_index_parts(entries: IndexEntries, pack_checksum: bytes) -> Iterator[bytes]:
    """A version-2 `.idx` for `entries`, in parts, without its trailing checksum."""
    buckets = entries.sorted_buckets()
    fanout, running = [], 0
    for bucket in buckets:
        running += len(bucket) // _ENTRY.size
        fanout.append(running)
    yield IDX_MAGIC + struct.pack(">256L", *fanout)
    # Bucket by bucket (a million ids' index is never held twice); the empty ones add nothing
    # (a tool call's pack holds a few ids: 3 x 256 loops were most of its index's cost).
    filled = [list(_ENTRY.iter_unpack(bucket)) for bucket in buckets if bucket]
    for rows in filled:
        yield b"".join(sha for sha, _, _ in rows)
    for rows in filled:
        yield struct.pack(f">{len(rows)}L", *(crc for _, _, crc in rows))
    large: list[int] = []
    for rows in filled:
        offsets = []
        for _, offset, _ in rows:
            if offset < 0x80000000:
                offsets.append(offset)
            else:  # packs over 2 GiB: the offset lives in the 64-bit table
                offsets.append(0x80000000 | len(large))
                large.append(offset)
        yield struct.pack(f">{len(offsets)}L", *offsets)
    yield struct.pack(f">{len(large)}Q", *large)
    yield pack_checksum


def write_pack_index(f: BinaryIO, entries: IndexEntries, pack_checksum: bytes) -> None:
    """Write the `.idx` for `entries` to `f`, part by part, with its trailing checksum."""
    digest = hashlib.sha1()
    for part in pack_index_parts(entries, pack_checksum):
        digest.update(part)
        f.write(part)
    f.write(digest.digest())


def encode_pack_index(entries: Iterable[tuple[bytes, int, int]], pack_checksum: bytes) -> bytes:
    """A version-2 `.idx` for (raw id, offset, crc32) entries."""
    body = b"".join(pack_index_parts(IndexEntries(entries), pack_checksum))
    return body + hashlib.sha1(body).digest()
