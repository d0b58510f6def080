"""Reading packs record by record, for gc (copy records verbatim) and verify (stream-hash them).

A pack is complete once its `.idx` exists (objects.py renames the index into place last). The
version-2 index lists, for each object, its id, the CRC-32 of its record and the record's offset;
sorting the offsets gives each record's length, so a record can be copied or inflated without
knowing anything else about the pack.

A whole (non-delta) record is a small header (type, inflated size) followed by the zlib stream of
the object's body: it can be copied into another pack byte for byte, and its body can be inflated
in chunks. Delta records (types 6 and 7, which undostore never writes but a foreign pack may hold)
are flagged so callers read those objects through dulwich instead.
"""

from __future__ import annotations

import hashlib
import os
import struct
import zlib
from collections.abc import Iterator
from dataclasses import dataclass

from undostore.git.objects import CHUNK, IDX_MAGIC, IDX_NAMES_AT, object_header

OFS_DELTA = 6
REF_DELTA = 7
_FANOUT_END = IDX_NAMES_AT


@dataclass(frozen=True, slots=True)
class Record:
    sha: bytes
    offset: int
    length: int
    crc: int


class PackFile:
    """One complete pack (`pack-*.pack` with its `.idx`), read through a plain file handle."""

    def __init__(self, base: str) -> None:
        self.base = base                      # path without the extension
        self.pack_path = base + ".pack"
        self.idx_path = base + ".idx"
        st = os.stat(self.pack_path)
        self.pack_size = st.st_size
        self.mtime = st.st_mtime
        self.idx_size = os.path.getsize(self.idx_path)
        self.records = _read_index(self.idx_path, self.pack_size)
        self._file = None

    @property
    def name(self) -> str:
        return os.path.basename(self.base)

    @property
    def size(self) -> int:
        return self.pack_size + self.idx_size

    def read(self, offset: int, length: int) -> bytes:
        if self._file is None:
            self._file = open(self.pack_path, "rb")  # noqa: SIM115 (closed by close())
        self._file.seek(offset)
        return self._file.read(length)

    def chunks(self, record: Record) -> Iterator[bytes]:
        """The record's raw bytes, in chunks of at most CHUNK bytes."""
        done = 0
        while done < record.length:
            step = min(CHUNK, record.length - done)
            block = self.read(record.offset + done, step)
            if len(block) != step:
                raise ValueError(f"{self.pack_path}: truncated record at {record.offset}")
            yield block
            done += step

    def header(self, record: Record) -> tuple[int, int, int]:
        """(type, inflated size, header length) of a record."""
        return parse_header(self.read(record.offset, min(record.length, 32)))

    def inflate(self, record: Record) -> Iterator[bytes]:
        """The body of a whole record, inflated in chunks; ValueError if it is damaged."""
        _, size, header_len = self.header(record)
        inflater = zlib.decompressobj()
        produced = 0
        skip = header_len
        for block in self.chunks(record):
            if skip:
                block, skip = block[skip:], max(0, skip - len(block))
            try:
                out = inflater.decompress(block)
            except zlib.error as err:
                raise ValueError(f"damaged record: {err}") from err
            produced += len(out)
            if produced > size:
                raise ValueError("record inflates to more than its stated size")
            if out:
                yield out
        if not inflater.eof or produced != size:
            raise ValueError("record is truncated")

    def whole_header(self, record: Record) -> tuple[int, int]:
        """(type, size) of a whole record; DeltaRecord for a delta."""
        type_num, size, _ = self.header(record)
        if type_num in (OFS_DELTA, REF_DELTA):
            raise DeltaRecord(record.sha.hex())
        return type_num, size

    def object_hash(self, record: Record) -> tuple[int, bytes]:
        """(type, git id computed from the bytes) of a whole record, streaming."""
        type_num, size = self.whole_header(record)
        digest = hashlib.sha1(object_header(type_num, size))
        for block in self.inflate(record):
            digest.update(block)
        return type_num, digest.digest()

    def body(self, record: Record) -> tuple[int, bytes]:
        """(type, body) of a small whole record (trees), hash-checked."""
        type_num, size = self.whole_header(record)
        body = b"".join(self.inflate(record))
        digest = hashlib.sha1(object_header(type_num, size))
        digest.update(body)
        if digest.digest() != record.sha:
            raise ValueError("hash mismatch")
        return type_num, body

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None


class DeltaRecord(Exception):
    """The object is stored as a delta: read it through dulwich (`Store.read`) instead."""


def parse_header(data: bytes) -> tuple[int, int, int]:
    """(type, inflated size, header length) of a pack record starting at `data`; for a delta
    record the length also covers its base reference."""
    if not data:
        raise ValueError("empty record")
    byte = data[0]
    type_num = (byte >> 4) & 7
    size = byte & 0x0F
    shift = 4
    pos = 1
    while byte & 0x80:
        if pos >= len(data):
            raise ValueError("truncated record header")
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
    elif type_num not in (1, 2, 3, 4):
        raise ValueError(f"unknown record type {type_num}")
    return type_num, size, pos


def _read_index(path: str, pack_size: int) -> list[Record]:
    """The records of a version-2 pack index, in pack order."""
    with open(path, "rb") as f:
        data = f.read()
    if len(data) < _FANOUT_END + 40 or data[:8] != IDX_MAGIC:
        raise ValueError(f"{path}: not a version 2 pack index")
    count = struct.unpack_from(">L", data, _FANOUT_END - 4)[0]
    names_at = _FANOUT_END
    crcs_at = names_at + 20 * count
    offsets_at = crcs_at + 4 * count
    large_at = offsets_at + 4 * count
    if len(data) < large_at + 40:
        raise ValueError(f"{path}: truncated pack index")
    crcs = struct.unpack_from(f">{count}L", data, crcs_at)
    small = struct.unpack_from(f">{count}L", data, offsets_at)
    offsets = []
    for value in small:
        if value & 0x80000000:
            value = struct.unpack_from(">Q", data, large_at + 8 * (value & 0x7FFFFFFF))[0]
        offsets.append(value)
    order = sorted(range(count), key=offsets.__getitem__)
    end = pack_size - 20
    records: list[Record] = []
    for rank, i in enumerate(order):
        start = offsets[i]
        stop = offsets[order[rank + 1]] if rank + 1 < count else end
        if not 12 <= start < stop <= end:
            raise ValueError(f"{path}: offsets do not fit the pack")
        records.append(Record(data[names_at + 20 * i:names_at + 20 * i + 20], start, stop - start,
                              crcs[i]))
    return records


def list_packs(pack_dir: str) -> tuple[list[PackFile], list[str]]:
    """(complete packs, paths of packs whose index is unreadable)."""
    try:
        names = os.listdir(pack_dir)
    except FileNotFoundError:
        return [], []
    packs: list[PackFile] = []
    broken: list[str] = []
    for name in sorted(names):
        if not (name.startswith("pack-") and name.endswith(".pack")):
            continue
        base = os.path.join(pack_dir, name[:-5])
        if name[:-5] + ".idx" not in names:
            continue
        try:
            packs.append(PackFile(base))
        except (OSError, ValueError):
            broken.append(base + ".pack")
    return packs, broken


def pack_census(pack_dir: str) -> dict[str, tuple[float, int]]:
    """Complete packs by base name: (mtime of the .pack, object count from the index header),
    without reading whole indexes."""
    out: dict[str, tuple[float, int]] = {}
    try:
        names = set(os.listdir(pack_dir))
    except FileNotFoundError:
        return out
    for name in names:
        if not (name.startswith("pack-") and name.endswith(".pack")
                and name[:-5] + ".idx" in names):
            continue
        try:
            mtime = os.stat(os.path.join(pack_dir, name)).st_mtime
            with open(os.path.join(pack_dir, name[:-5] + ".idx"), "rb") as f:
                head = f.read(_FANOUT_END)
        except OSError:
            continue
        if len(head) == _FANOUT_END and head[:8] == IDX_MAGIC:
            out[name[:-5]] = (mtime, struct.unpack_from(">L", head, _FANOUT_END - 4)[0])
    return out


class PackSet:
    """Every complete pack of a store, with a map from object id to where its record lies."""

    def __init__(self, pack_dir: str) -> None:
        self.packs, self.broken = list_packs(pack_dir)
        self.where: dict[bytes, tuple[PackFile, Record]] = {}
        for pack in self.packs:
            for record in pack.records:
                self.where.setdefault(record.sha, (pack, record))

    def __contains__(self, sha: bytes) -> bool:
        return sha in self.where

    def object_count(self) -> int:
        return sum(len(p.records) for p in self.packs)

    def close(self) -> None:
        for pack in self.packs:
            pack.close()
