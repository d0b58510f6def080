"""One pack (`pack-*.pack` with its `.idx`): open checks, record headers, the one inflater.

A pack is complete when both files sit in the pack folder (`complete_packs`, the one rule; the
writer renames the index in last). Opening checks what is cheap to check: the index's own
checksum, the pack's trailer equals the copy its index was written for, and the pack is long
enough for every offset its index lists; a pack that fails raises PackDamaged and its objects
count as absent.
Every record is a header (type, inflated size; a delta's base reference) and a zlib stream;
`inflate` is the only inflater, `copy` the only verbatim copy (CRC-checked against the index).
Ours, not dulwich's: streaming multi-GB records from an mmap and copying records verbatim.
"""

from __future__ import annotations

import bisect
import hashlib
import mmap
import os
import zlib
from array import array
from collections.abc import Iterator
from typing import NamedTuple

from undostore.git.objects import CHUNK, object_header
from undostore.git.packindex import PackIndexFile

OFS_DELTA = 6
REF_DELTA = 7
DELTAS = (OFS_DELTA, REF_DELTA)
PACK_MAGIC = b"PACK"
DAMAGED_DIR = "damaged"


class PackDamaged(ValueError):
    """A pack or its index cannot be trusted as a whole."""


class RecordDamaged(ValueError):
    """One record does not inflate, does not fit, or does not match its CRC."""


class Record(NamedTuple):
    sha: bytes
    offset: int
    length: int
    crc: int


def complete_packs(pack_dir: str) -> list[str]:
    """Base paths (no extension) of the complete packs in `pack_dir`, sorted."""
    try:
        names = set(os.listdir(pack_dir))
    except FileNotFoundError:
        return []
    return sorted(os.path.join(pack_dir, n[:-4]) for n in names
                  if n.startswith("pack-") and n.endswith(".idx") and n[:-4] + ".pack" in names)


def indexless_packs(pack_dir: str) -> list[str]:
    """Paths of `pack-*.pack` files with no index beside them."""
    try:
        names = set(os.listdir(pack_dir))
    except FileNotFoundError:
        return []
    return sorted(os.path.join(pack_dir, n) for n in names
                  if n.startswith("pack-") and n.endswith(".pack") and n[:-5] + ".idx" not in names)


RELEASE_AFTER = 8 << 20
FAULT_AROUND = 64 << 10
_DONTNEED = getattr(mmap, "MADV_DONTNEED", None)   # not on Windows


class Pack:
    """One complete pack, index and data mmapped; PackDamaged if it fails the open checks.
    Unchecked (`check=False`, for salvage) a pack opens without a readable index too
    (`index` None: only `header`, `inflate` and `scan` work)."""

    index: PackIndexFile

    def __init__(self, base: str, check: bool = True, release_after: int = RELEASE_AFTER) -> None:
        self.base = base
        self.pack_path = base + ".pack"
        self.idx_path = base + ".idx"
        self.name = os.path.basename(base)
        try:
            self.index = PackIndexFile(self.idx_path)
        except (OSError, ValueError) as err:
            if check:
                raise PackDamaged(f"its index is unreadable ({err})") from None
            self.index = None  # type: ignore[assignment]
        try:
            with open(self.pack_path, "rb") as f:
                st = os.fstat(f.fileno())
                self.data = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) if st.st_size \
                    else b""
            self.pack_size, self.mtime = st.st_size, st.st_mtime
            self.idx_size = os.path.getsize(self.idx_path) if self.index is not None else 0
            # Records end before the trailer; a pack opened unchecked (salvage) may have lost
            # its trailer, and each stream's own end (and its hash) tells where it stops.
            self._end = len(self.data) - 20 if check else len(self.data)
            if check:
                self._check()
        except BaseException:
            self.close()
            raise
        self._records: list[Record] | None = None
        self._starts: array[int] | None = None
        self._unreleased = 0
        self._release_after = release_after

    def _check(self) -> None:
        data = self.data
        if len(data) < 32 or data[:4] != PACK_MAGIC:
            raise PackDamaged("not a pack file (cut short?)")
        if data[-20:] != self.index.pack_checksum:
            raise PackDamaged("its trailer does not match its index (cut short or overwritten)")
        if int.from_bytes(data[8:12], "big") != self.index.count:
            raise PackDamaged("its object count differs from its index")
        if self.index.count and self.index.max_offset() + 2 > len(data) - 20:
            raise PackDamaged("its index lists records past its end")
        if not self.index.checksum_ok():
            raise PackDamaged("its index fails its checksum")

    @property
    def size(self) -> int:
        return self.pack_size + self.idx_size

    def records(self) -> list[Record]:
        """Every record in pack order, with its length (up to the next record)."""
        if self._records is None:
            index = self.index
            offsets = index.offsets()
            names, crcs = index.name_list(), index.crcs()
            order = sorted(range(index.count), key=offsets.__getitem__)
            ends = [offsets[i] for i in order[1:]] + [self._end]
            records = []
            for i, stop in zip(order, ends, strict=True):
                start = offsets[i]
                if not 12 <= start < stop <= self._end:
                    raise PackDamaged("its index lists overlapping or misplaced records")
                records.append(Record(names[i], start, stop - start, crcs[i]))
            self._records = records
        return self._records

    def record_of(self, sha: bytes) -> Record | None:
        """The record of `sha` in this pack, None if the index does not list it."""
        position = self.index.position(sha)
        if position is None:
            return None
        records = self.records()
        offset = self.index.offset_at(position)
        return records[bisect.bisect_left(records, offset, key=lambda r: r.offset)]

    def record_end(self, offset: int) -> int:
        """Where the record starting at `offset` ends: the next record's start, or the trailer
        (the starts kept sorted as 8 bytes each, not a `Record` per object)."""
        if self._starts is None:
            self._starts = array("q", sorted(self.index.offsets()))
        at = bisect.bisect_right(self._starts, offset)
        return self._starts[at] if at < len(self._starts) else self._end

    def record_intact(self, position: int, start: int | None = None) -> bool:
        """Whether the record at index `position` (starting at `start`, where the caller has
        it) has the CRC-32 its index lists: its bytes read once, at most CHUNK at a time (a
        multi-GB record is never copied whole), nothing inflated."""
        if start is None:
            start = self.index.offset_at(position)
        end = self.record_end(start)
        if end - start <= CHUNK:
            crc = zlib.crc32(self._read(start, end))
        else:
            crc = 0
            for at in range(start, end, CHUNK):
                crc = zlib.crc32(self._read(at, min(at + CHUNK, end)), crc)
        return crc == self.index.crc_at(position)

    def _read(self, start: int, end: int) -> bytes:
        """Bytes of the pack (counted by `_touch`)."""
        self._touch(end - start)
        return self.data[start:end]

    def _touch(self, size: int) -> None:
        """Count a read of `size` bytes. Every `release_after` bytes counted, the mapping's
        pages are let go (`MADV_DONTNEED`; they stay in the page cache): a restore reading a
        whole 100 MB pack would otherwise count it all in its resident set. A page fault maps
        up to 16 pages around it (the kernel's fault-around), so a small read counts as 64 KB:
        2,900 small blobs read once each kept 36 MB of a pack resident when counted by size."""
        self._unreleased += max(size, FAULT_AROUND)
        if self._unreleased >= self._release_after and _DONTNEED is not None \
                and isinstance(self.data, mmap.mmap):
            self.data.madvise(_DONTNEED)
            self._unreleased = 0

    def header(self, offset: int) -> tuple[int, int, int]:
        """(type, inflated size, header length) of the record at `offset`."""
        self._touch(64)
        return parse_header(self.data[offset:offset + 64])

    def inflate(self, start: int, size: int, ends: list[int] | None = None) -> Iterator[bytes]:
        """The zlib stream at `start` inflated, in chunks of at most CHUNK bytes; RecordDamaged
        unless it ends inside the pack and yields exactly `size` bytes. Where the stream ended
        is appended to `ends`."""
        end = self._end
        inflater = zlib.decompressobj()
        at = start
        # Deflate grows data by at most ~0.05% plus a few bytes: one slice holds a small stream.
        want = min(size + (size >> 9) + 64, CHUNK)
        produced = 0
        pending = b""
        try:
            while not inflater.eof:
                if not pending:
                    if at >= end:
                        raise RecordDamaged("its record is cut short")
                    pending = self._read(at, min(at + want, end))
                    at += len(pending)
                    want = CHUNK
                out = inflater.decompress(pending, CHUNK)
                pending = inflater.unconsumed_tail
                produced += len(out)
                if produced > size:
                    raise RecordDamaged("it inflates to more bytes than its header says")
                if out:
                    yield out
        except zlib.error as err:
            raise RecordDamaged(f"zlib: {err}") from None
        if produced != size:
            raise RecordDamaged(f"it inflates to {produced} bytes, its header says {size}")
        if ends is not None:
            ends.append(at - len(pending) - len(inflater.unused_data))

    def inflate_whole(self, start: int, size: int) -> bytes:
        """A small record's stream (`size` at most CHUNK) inflated in one call, with the
        checks of `inflate`."""
        inflater = zlib.decompressobj()
        end = min(start + size + (size >> 9) + 64, self._end)
        try:
            out = inflater.decompress(self._read(start, end), size + 1)
        except zlib.error as err:
            raise RecordDamaged(f"zlib: {err}") from None
        if not inflater.eof:
            if len(out) > size:
                raise RecordDamaged("it inflates to more bytes than its header says")
            return b"".join(self.inflate(start, size))   # an odd stream: the careful way
        if len(out) != size:
            raise RecordDamaged(f"it inflates to {len(out)} bytes, its header says {size}")
        return out

    def scan(self) -> Iterator[tuple[int, bytes, int, int]]:
        """(type, id computed from the bytes, size, stream start) of each whole record from the
        start of the pack, stopping at the first that does not inflate (or a delta): what a
        pack holds when its index cannot be trusted."""
        at = 12
        while at < self._end:
            ends: list[int] = []
            try:
                type_num, size, header_len = self.header(at)
                if type_num in DELTAS:
                    return
                digest = hashlib.sha1(object_header(type_num, size))
                for chunk in self.inflate(at + header_len, size, ends):
                    digest.update(chunk)
            except RecordDamaged:
                return
            yield type_num, digest.digest(), size, at + header_len
            at = ends[0]

    def copy(self, record: Record) -> Iterator[bytes]:
        """The record's bytes verbatim, in chunks; RecordDamaged at the end if its CRC-32 is not
        the one its index lists (a caller rolls back what it wrote)."""
        crc = 0
        for at in range(record.offset, record.offset + record.length, CHUNK):
            block = self._read(at, min(at + CHUNK, record.offset + record.length))
            crc = zlib.crc32(block, crc)
            yield block
        if crc != record.crc:
            raise RecordDamaged("its CRC-32 does not match its index")

    def close(self) -> None:
        if isinstance(getattr(self, "data", None), mmap.mmap):
            self.data.close()
        if getattr(self, "index", None) is not None:
            self.index.close()


def parse_header(data: bytes) -> tuple[int, int, int]:
    """(type, inflated size, header length) of a pack record starting at `data`; for a delta
    record the length also covers its base reference. RecordDamaged if it is not a header."""
    try:
        byte = data[0]
        type_num = (byte >> 4) & 7
        size = byte & 0x0F
        shift = 4
        pos = 1
        while byte & 0x80:
            byte = data[pos]
            size |= (byte & 0x7F) << shift
            shift += 7
            pos += 1
        if type_num == REF_DELTA:
            pos += 20
        elif type_num == OFS_DELTA:
            while data[pos] & 0x80:
                pos += 1
            pos += 1
    except IndexError:
        raise RecordDamaged("its record header is cut short") from None
    if type_num not in (1, 2, 3, 4, OFS_DELTA, REF_DELTA):
        raise RecordDamaged(f"unknown record type {type_num}")
    return type_num, size, pos


def record_header(type_num: int, size: int) -> bytes:
    """The header of a whole record (the inverse of `parse_header`)."""
    byte = (type_num << 4) | (size & 0x0F)
    size >>= 4
    out = bytearray()
    while size:
        out.append(byte | 0x80)
        byte = size & 0x7F
        size >>= 7
    out.append(byte)
    return bytes(out)
