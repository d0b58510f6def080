"""Random-access reads of store objects for restore: fast for many small objects, streaming for
large ones, and every object hash-checked before anything trusts its bytes.

`Store.read` goes through dulwich and returns whole objects. A restore reads thousands of small
objects (trees, blobs to write) and may read multi-GB blobs, so it looks objects up in the
version-2 pack indexes itself (binary search in the mmapped `.idx`, or `bisect` over its names
once a pack is asked often) and inflates whole (non-delta) records straight from the mmapped
pack, in chunks for large objects. Delta records, which undostore never writes but a foreign or
repacked store may hold, are read whole through `Store.read` (dulwich) instead.

Every read checks the git hash of what it produced; a stream checks it at its end, and callers
must not expose streamed bytes (rename the temp file into place) before the stream has ended.
"""

from __future__ import annotations

import bisect
import hashlib
import mmap
import os
import struct
import zlib
from collections.abc import Iterator

from .errors import IncompleteSnapshotError
from .objects import BLOB, CHUNK, TREE, object_header
from .store import Store

_IDX_MAGIC = b"\xfftOc\x00\x00\x00\x02"
_NAMES_AT = 8 + 256 * 4
_OFS_DELTA = 6
_REF_DELTA = 7
_BISECT_AFTER = 64          # lookups in one pack before its names are copied into a list


class _Pack:
    """One complete pack: its mmapped index and data."""

    def __init__(self, idx_path: str, pack_path: str) -> None:
        self._idx_file = open(idx_path, "rb")  # noqa: SIM115 (closed in close())
        self._pack_file = open(pack_path, "rb")  # noqa: SIM115
        try:
            self.idx = mmap.mmap(self._idx_file.fileno(), 0, access=mmap.ACCESS_READ)
            self.data = mmap.mmap(self._pack_file.fileno(), 0, access=mmap.ACCESS_READ)
        except (OSError, ValueError):
            self.close()
            raise
        if len(self.idx) < _NAMES_AT + 40 or self.idx[:8] != _IDX_MAGIC:
            self.close()
            raise ValueError(f"{idx_path}: not a version 2 pack index")
        self.fanout = struct.unpack_from(">256L", self.idx, 8)
        self.count = self.fanout[255]
        self._offsets_at = _NAMES_AT + self.count * 24     # after names and CRCs
        self._large_at = self._offsets_at + self.count * 4
        self._names: list[bytes] | None = None
        self._lookups = 0

    def position(self, sha: bytes) -> int | None:
        """Index position of `sha` in this pack, or None."""
        first = sha[0]
        lo = self.fanout[first - 1] if first else 0
        hi = self.fanout[first]
        if lo >= hi:
            return None
        self._lookups += 1
        # Copying the ids into a list costs O(pack size); it pays only after many lookups
        # (a restore's thousands, not a diff's hundreds in a 100,000-object pack).
        if self._names is None and self._lookups > max(_BISECT_AFTER, self.count // 16):
            idx = self.idx
            self._names = [idx[at:at + 20] for at in range(_NAMES_AT, _NAMES_AT + 20 * self.count,
                                                             20)]
        if self._names is not None:
            at = bisect.bisect_left(self._names, sha, lo, hi)
            return at if at < hi and self._names[at] == sha else None
        idx = self.idx
        while lo < hi:
            mid = (lo + hi) // 2
            probe = idx[_NAMES_AT + mid * 20:_NAMES_AT + mid * 20 + 20]
            if probe < sha:
                lo = mid + 1
            elif probe > sha:
                hi = mid
            else:
                return mid
        return None

    def offset(self, position: int) -> int:
        (value,) = struct.unpack_from(">L", self.idx, self._offsets_at + position * 4)
        if value & 0x80000000:
            (value,) = struct.unpack_from(">Q", self.idx, self._large_at + (value & 0x7FFFFFFF) * 8)
        return value

    def close(self) -> None:
        for name in ("idx", "data"):
            mapped = getattr(self, name, None)
            if mapped is not None:
                mapped.close()
        self._idx_file.close()
        self._pack_file.close()


class _Located:
    """Where a whole object's zlib stream starts, and what it inflates to."""

    __slots__ = ("pack", "start", "type_num", "size")

    def __init__(self, pack: _Pack, start: int, type_num: int, size: int) -> None:
        self.pack, self.start, self.type_num, self.size = pack, start, type_num, size


def _damaged(sha: bytes, why: str) -> IncompleteSnapshotError:
    return IncompleteSnapshotError(f"object {sha.hex()} is damaged in the store: {why}",
                                   corrupt=[sha.hex()])


class ObjectReader:
    """Reads objects of one store; open it after the store's last write, close it when done."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self._packs: list[_Pack] = []
        try:
            names = set(os.listdir(store.pack_dir))
        except FileNotFoundError:
            names = set()
        for name in sorted(names):
            if name.endswith(".idx") and name[:-4] + ".pack" in names:
                try:
                    self._packs.append(_Pack(os.path.join(store.pack_dir, name),
                                             os.path.join(store.pack_dir, name[:-4] + ".pack")))
                except (OSError, ValueError):
                    continue  # an unreadable pack: its objects count as missing

    def _locate(self, sha: bytes) -> _Located | None:
        """The object's whole record, None if absent; raises on a delta record (caller falls
        back to dulwich) via the sentinel type numbers."""
        for pack in self._packs:
            position = pack.position(sha)
            if position is None:
                continue
            offset = pack.offset(position)
            data = pack.data
            if offset + 2 > len(data):
                raise _damaged(sha, "its record lies past the end of the pack")
            byte = data[offset]
            type_num = (byte >> 4) & 7
            size = byte & 0x0F
            shift = 4
            at = offset + 1
            while byte & 0x80:
                if at >= len(data):
                    raise _damaged(sha, "truncated record header")
                byte = data[at]
                size |= (byte & 0x7F) << shift
                shift += 7
                at += 1
            return _Located(pack, at, type_num, size)
        return None

    def has(self, sha: bytes) -> bool:
        return any(pack.position(sha) is not None for pack in self._packs)

    def type_of(self, sha: bytes) -> int | None:
        """The object's type number from its record header (nothing inflated); None if absent."""
        located = self._locate(sha)
        if located is None:
            return None
        if located.type_num in (_OFS_DELTA, _REF_DELTA):
            return self.store.read(sha)[0]
        return located.type_num

    def size_of(self, sha: bytes) -> int:
        """The inflated size of an object (missing: IncompleteSnapshotError)."""
        located = self._locate(sha)
        if located is None:
            raise _missing(sha)
        if located.type_num in (_OFS_DELTA, _REF_DELTA):
            return len(self.store.read(sha)[1])
        return located.size

    def read(self, sha: bytes) -> tuple[int, bytes]:
        """(type number, body), hash-checked; IncompleteSnapshotError if missing or damaged."""
        located = self._locate(sha)
        if located is None:
            raise _missing(sha)
        if located.type_num in (_OFS_DELTA, _REF_DELTA):
            return self.store.read(sha)
        body = b"".join(self._inflate(sha, located))
        check = hashlib.sha1(object_header(located.type_num, len(body)))
        check.update(body)
        if check.digest() != sha:
            raise _damaged(sha, "its content does not hash to its id")
        return located.type_num, body

    def read_tree_body(self, sha: bytes) -> bytes:
        type_num, body = self.read(sha)
        if type_num != TREE:
            raise _damaged(sha, "expected a tree")
        return body

    def read_blob(self, sha: bytes) -> bytes:
        type_num, body = self.read(sha)
        if type_num != BLOB:
            raise _damaged(sha, "expected a blob")
        return body

    def small_blob(self, sha: bytes, limit: int) -> bytes | None:
        """A blob's bytes, hash-checked, if it is at most `limit` bytes; None if larger."""
        located = self._locate(sha)
        if located is None:
            raise _missing(sha)
        if located.type_num in (_OFS_DELTA, _REF_DELTA):
            body = self.store.read_blob(sha)
            return body if len(body) <= limit else None
        if located.type_num != BLOB:
            raise _damaged(sha, "expected a blob")
        if located.size > limit:
            return None
        body = b"".join(self._inflate(sha, located))
        check = hashlib.sha1(object_header(BLOB, len(body)))
        check.update(body)
        if check.digest() != sha:
            raise _damaged(sha, "its content does not hash to its id")
        return body

    def blob_chunks(self, sha: bytes) -> Iterator[bytes]:
        """A blob's bytes in chunks of at most CHUNK, in constant memory. The hash is checked
        after the last chunk: IncompleteSnapshotError is raised there if it does not match."""
        located = self._locate(sha)
        if located is None:
            raise _missing(sha)
        if located.type_num in (_OFS_DELTA, _REF_DELTA):
            yield self.store.read_blob(sha)
            return
        if located.type_num != BLOB:
            raise _damaged(sha, "expected a blob")
        check = hashlib.sha1(object_header(BLOB, located.size))
        for chunk in self._inflate(sha, located):
            check.update(chunk)
            yield chunk
        if check.digest() != sha:
            raise _damaged(sha, "its content does not hash to its id")

    def verify_blob(self, sha: bytes) -> int:
        """Inflate and hash a blob without keeping it; returns its size."""
        size = 0
        for chunk in self.blob_chunks(sha):
            size += len(chunk)
        return size

    def _inflate(self, sha: bytes, located: _Located) -> Iterator[bytes]:
        data = located.pack.data
        inflater = zlib.decompressobj()
        at = located.start
        # Deflate never grows data by more than ~0.05% plus a few bytes, so one slice usually
        # holds a small object's whole stream.
        want = min(located.size + (located.size >> 9) + 64, CHUNK)
        produced = 0
        pending = b""
        try:
            while not inflater.eof:
                if not pending:
                    pending = data[at:at + want]
                    at += len(pending)
                    want = CHUNK
                out = inflater.decompress(pending, CHUNK)
                pending = inflater.unconsumed_tail
                if not out and not pending and at >= len(data) and not inflater.eof:
                    raise _damaged(sha, "its record is cut short")
                produced += len(out)
                if produced > located.size:
                    raise _damaged(sha, "it inflates to more bytes than its header says")
                if out:
                    yield out
        except zlib.error as err:
            raise _damaged(sha, f"zlib: {err}") from err
        if produced != located.size:
            raise _damaged(sha, f"it inflates to {produced} bytes, its header says {located.size}")

    def close(self) -> None:
        for pack in self._packs:
            pack.close()
        self._packs.clear()

    def __enter__(self) -> ObjectReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _missing(sha: bytes) -> IncompleteSnapshotError:
    return IncompleteSnapshotError(f"object {sha.hex()} is missing from the store",
                                   missing=[sha.hex()])
