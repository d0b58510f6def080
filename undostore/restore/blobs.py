"""What a restore writes and where it may pause: the verified blobs, the sparse-aware writer,
and the checkpoints counted at each file operation."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable

from undostore.git.reader import BlobAt, ObjectReader
from undostore.restore.cancel import Cancel

BLOCK = 4096
_ZERO_BLOCK = bytes(BLOCK)

Hook = Callable[[str, str], None]


class BlobSource:
    """The blobs a restore writes, checked before the first change (present, records intact:
    `ObjectReader.verify_blobs`) and read from the packs as each file is written, nothing
    held: a stream raises at its end if it does not hash to its id, before its temp file is
    put in place."""

    def __init__(self, reader: ObjectReader, located: dict[bytes, BlobAt] | None = None
                 ) -> None:
        self.reader = reader
        self.located = located or {}   # found by the check: nothing is looked up again

    @classmethod
    def verified(cls, reader: ObjectReader, shas: Iterable[bytes]) -> BlobSource:
        """The blobs `shas`, checked; those absent from the store are left out."""
        return cls(reader, reader.verify_blobs(shas))

    def chunks(self, sha: bytes) -> Iterable[bytes]:
        """The blob's bytes in chunks; raises at the end if they do not hash to `sha` (a
        small one is read whole and checked before any of it is handed out)."""
        at = self.located.get(sha)
        if at is not None:
            body = self.reader.small_blob(sha, at)
            if body is not None:
                return (body,)
        return self.reader.blob_chunks(sha, at)

    def size(self, sha: bytes) -> int:
        at = self.located.get(sha)
        return at.size if at is not None else self.reader.size_of(sha)

    def release(self) -> None:
        """Forget where the blobs lie (20,000 of them: ~3 MB); reads after it look them up."""
        self.located = {}

    def whole(self, sha: bytes) -> bytes:
        return self.reader.read_blob(sha)


def write_sparse(fd: int, chunks: Iterable[bytes]) -> int:
    """Write `chunks` to the new, empty file `fd`, leaving every aligned block of zeros
    (BLOCK bytes or more) as a hole: seek past it, and set the size at the end. Streaming;
    returns the size."""
    pos = 0        # bytes of content so far
    written = 0    # where the file's write offset is
    if isinstance(chunks, tuple) and len(chunks) == 1 and 0 < len(chunks[0]) < BLOCK:
        return _write_at(fd, memoryview(chunks[0]), 0, 0)   # one small blob: no hole to leave
    for chunk in chunks:
        view = memoryview(chunk)
        if chunk.count(0) == len(chunk):
            pos += len(chunk)  # all zeros, whatever its length: nothing to write
            continue
        if len(view) < BLOCK or chunk.find(_ZERO_BLOCK) < 0:
            written = _write_at(fd, view, pos, written)
            pos += len(view)
            continue
        start = 0
        at = (-pos) % BLOCK                   # first block boundary inside this chunk
        while at + BLOCK <= len(view):
            if view[at:at + BLOCK] == _ZERO_BLOCK:
                end = at + BLOCK
                while end + BLOCK <= len(view) and view[end:end + BLOCK] == _ZERO_BLOCK:
                    end += BLOCK
                if at > start:
                    written = _write_at(fd, view[start:at], pos + start, written)
                start = at = end
            else:
                at += BLOCK
        if start < len(view):
            written = _write_at(fd, view[start:], pos + start, written)
        pos += len(view)
    if written != pos:
        os.ftruncate(fd, pos)
    return pos


def _write_at(fd: int, view: memoryview, offset: int, current: int) -> int:
    """Write `view` at `offset` (seeking only when not already there); the offset after."""
    if offset != current:
        os.lseek(fd, offset, os.SEEK_SET)
    size = len(view)
    while view:
        view = view[os.write(fd, view):]
    return offset + size


class Checkpoints:
    """Counts a restore's file operations and calls `hook(what, path)` after each: a caller
    reports progress there, a test pauses a restore at one step (it hands the hook in through
    `Worktree.checkpoint`, or `Workspace.checkpoint`). With `cancel`, each checkpoint is also
    where a cancel request stops the restore (raises Cancelled)."""

    def __init__(self, hook: Hook | None = None, cancel: Cancel | None = None) -> None:
        self.count = 0
        self.hook = hook
        self.cancel = cancel

    def before(self, what: str, path: str) -> None:
        """Called once the checks of a change passed, right before it is made: the hook sees
        `before <what>` (not counted: a test swaps a file there, in the window an attacker
        would aim at)."""
        if self.hook is not None:
            self.hook(f"before {what}", path)
        if self.cancel is not None:
            self.cancel.check()

    def __call__(self, what: str, path: str) -> None:
        self.count += 1
        if self.hook is not None:
            self.hook(what, path)
        if self.cancel is not None:
            self.cancel.check()
