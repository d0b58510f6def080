"""What a blob is to a diff: binary or text (git's rule: a NUL in the first 8,000 bytes, or
larger than core.bigFileThreshold), and how many lines a change adds and removes."""

from __future__ import annotations

from typing import Protocol

from undostore.diff.linediff import diff_lines, split_lines

BINARY_PROBE = 8000
BIG_FILE = 512 << 20          # git's core.bigFileThreshold: bigger files count as binary


class Blobs(Protocol):
    """Where blob bodies come from: a `Store`, or an `ObjectReader` over it."""

    def read_blob(self, sha: bytes) -> bytes: ...


class BigBlob:
    """A blob over git's big-file threshold: binary by definition, so never read."""

    def __init__(self, size: int) -> None:
        self.size = size

    def __len__(self) -> int:
        return self.size


def is_binary(data: bytes | BigBlob) -> bool:
    return isinstance(data, BigBlob) or b"\0" in data[:BINARY_PROBE]


def read_side(blobs: Blobs, hex_id: str | None) -> bytes | BigBlob | None:
    if hex_id is None:
        return None
    sha = bytes.fromhex(hex_id)
    size_of = getattr(blobs, "size_of", None)   # an ObjectReader knows sizes without inflating
    if size_of is not None:
        size = size_of(sha)
        if size > BIG_FILE:
            return BigBlob(size)
    return blobs.read_blob(sha)


def count_lines(data: bytes) -> int:
    return data.count(b"\n") + (1 if data and not data.endswith(b"\n") else 0)


def counts_of(old: bytes | BigBlob | None, new: bytes | BigBlob | None, same: bool
            ) -> tuple[int | None, int | None]:
    if (old is not None and is_binary(old)) or (new is not None and is_binary(new)):
        return None, None
    if same:
        return 0, 0
    assert not isinstance(old, BigBlob) and not isinstance(new, BigBlob)
    if old is None or new is None:
        return count_lines(new or b""), count_lines(old or b"")
    edits = diff_lines(split_lines(old), split_lines(new))
    return sum(e.n2 for e in edits), sum(e.n1 for e in edits)


def line_counts(blobs: Blobs, old_id: str | None, new_id: str | None
                ) -> tuple[int | None, int | None]:
    """(added, removed) lines from blob `old_id` to `new_id` (None: absent) as git counts them;
    (None, None) if either is binary."""
    return counts_of(read_side(blobs, old_id), read_side(blobs, new_id), old_id == new_id)
