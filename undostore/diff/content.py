"""What a blob is to a diff: binary or text (git's rule: a NUL in the first 8,000 bytes, or
larger than core.bigFileThreshold), and how many lines a change adds and removes."""

from __future__ import annotations

from typing import Protocol

from undostore.diff.linediff import diff_lines, split_lines
from undostore.git.reader import ObjectReader

BINARY_PROBE = 8000
BIG_FILE = 512 << 20          # git's core.bigFileThreshold: bigger files count as binary
PROBE_FIRST = 1 << 20         # a blob bigger than this is probed for a NUL before it is read


class Blobs(Protocol):
    """Where blob bodies come from: a `Store`, or an `ObjectReader` over it."""

    def read_blob(self, sha: bytes) -> bytes: ...


class BinaryBlob:
    """A blob known to be binary without being read whole (over git's big-file threshold, or
    a NUL in its first bytes): its size only, so a diff of two big binaries holds neither."""

    def __init__(self, size: int) -> None:
        self.size = size

    def __len__(self) -> int:
        return self.size


def is_binary(data: bytes | BinaryBlob) -> bool:
    return isinstance(data, BinaryBlob) or b"\0" in data[:BINARY_PROBE]


def read_side(blobs: Blobs, hex_id: str | None) -> bytes | BinaryBlob | None:
    if hex_id is None:
        return None
    sha = bytes.fromhex(hex_id)
    if isinstance(blobs, ObjectReader):   # it knows sizes, and heads, without inflating all
        size = blobs.size_of(sha)
        if size > BIG_FILE or (size > PROBE_FIRST and b"\0" in blobs.blob_head(sha, BINARY_PROBE)):
            return BinaryBlob(size)
    return blobs.read_blob(sha)


def count_lines(data: bytes) -> int:
    return data.count(b"\n") + (1 if data and not data.endswith(b"\n") else 0)


def counts_of(old: bytes | BinaryBlob | None, new: bytes | BinaryBlob | None, same: bool
            ) -> tuple[int | None, int | None]:
    if (old is not None and is_binary(old)) or (new is not None and is_binary(new)):
        return None, None
    if same:
        return 0, 0
    assert not isinstance(old, BinaryBlob) and not isinstance(new, BinaryBlob)
    if old is None or new is None:
        return count_lines(new or b""), count_lines(old or b"")
    edits = diff_lines(split_lines(old), split_lines(new))
    return sum(e.n2 for e in edits), sum(e.n1 for e in edits)


def line_counts(blobs: Blobs, old_id: str | None, new_id: str | None
                ) -> tuple[int | None, int | None]:
    """(added, removed) lines from blob `old_id` to `new_id` (None: absent) as git counts them;
    (None, None) if either is binary."""
    return counts_of(read_side(blobs, old_id), read_side(blobs, new_id), old_id == new_id)
