"""Random-access reads of store objects for restore: fast for many small objects, streaming for
large ones, and every object hash-checked before anything trusts its bytes.

`Store.read` goes through dulwich and returns whole objects. A restore reads thousands of small
objects (trees, blobs to write) and may read multi-GB blobs, so it looks objects up in the
version-2 pack indexes itself (`objects.PackIndexFile`) and inflates whole (non-delta) records
straight from the mmapped pack, in chunks for large objects. Delta records, which undostore
never writes but a foreign or repacked store may hold, are read whole through `Store.read`
(dulwich) instead.

Every read checks the git hash of what it produced; a stream checks it at its end, and callers
must not expose streamed bytes (rename the temp file into place) before the stream has ended.
"""

from __future__ import annotations

import hashlib
import mmap
import os
import zlib
from collections.abc import Iterator
from typing import Protocol

from undostore.errors import IncompleteSnapshotError
from undostore.git.objects import BLOB, CHUNK, TREE, PackIndexFile, object_header
from undostore.git.packfile import OFS_DELTA, REF_DELTA, parse_header


class ObjectSource(Protocol):
    """What a reader reads from: a pack folder, and a whole-object read (dulwich) for the delta
    records undostore never writes but a foreign pack may hold."""

    pack_dir: str

    def read(self, sha: bytes) -> tuple[int, bytes]: ...


class _Pack:
    """One complete pack: its index (objects.PackIndexFile) and its mmapped data."""

    def __init__(self, idx_path: str, pack_path: str) -> None:
        self.index = PackIndexFile(idx_path)
        try:
            with open(pack_path, "rb") as f:
                self.data = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        except (OSError, ValueError):
            self.index.close()
            raise

    def position(self, sha: bytes) -> int | None:
        return self.index.position(sha)

    def offset(self, position: int) -> int:
        return self.index.offset_at(position)

    def close(self) -> None:
        self.index.close()
        self.data.close()


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

    def __init__(self, store: ObjectSource) -> None:
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
            if offset + 2 > len(pack.data):
                raise _damaged(sha, "its record lies past the end of the pack")
            try:  # a header is at most a few bytes (and a delta's base reference)
                type_num, size, header_len = parse_header(pack.data[offset:offset + 64])
            except (ValueError, IndexError) as err:
                raise _damaged(sha, f"bad record header: {err}") from None
            return _Located(pack, offset + header_len, type_num, size)
        return None

    def has(self, sha: bytes) -> bool:
        return any(pack.position(sha) is not None for pack in self._packs)

    def type_of(self, sha: bytes) -> int | None:
        """The object's type number from its record header (nothing inflated); None if absent."""
        located = self._locate(sha)
        if located is None:
            return None
        if located.type_num in (OFS_DELTA, REF_DELTA):
            return self.store.read(sha)[0]
        return located.type_num

    def size_of(self, sha: bytes) -> int:
        """The inflated size of an object (missing: IncompleteSnapshotError)."""
        located = self._locate(sha)
        if located is None:
            raise _missing(sha)
        if located.type_num in (OFS_DELTA, REF_DELTA):
            return len(self.store.read(sha)[1])
        return located.size

    def read(self, sha: bytes) -> tuple[int, bytes]:
        """(type number, body), hash-checked; IncompleteSnapshotError if missing or damaged."""
        located = self._locate(sha)
        if located is None:
            raise _missing(sha)
        if located.type_num in (OFS_DELTA, REF_DELTA):
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
        if located.type_num in (OFS_DELTA, REF_DELTA):
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
        if located.type_num in (OFS_DELTA, REF_DELTA):
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
