"""Git objects: ids, headers and the tree codec (SHA-1, so a snapshot id is git's tree id).

Rules: ids are raw 20-byte digests everywhere inside undostore (hex only at the edges); a tree's
entries are (mode, name, raw id) and are always encoded in git's order.
Ours, not dulwich's: `object_header` and `encode_tree` (dulwich's look up classes and take hex
ids: 2-4x slower on the snapshot's hot path); `decode_tree` uses dulwich's Rust `parse_tree`.
"""

from __future__ import annotations

import binascii
import hashlib
import os
from collections.abc import Callable, Iterable, Iterator
from functools import cache

COMMIT = 1
TREE = 2
BLOB = 3
TAG = 4
TYPE_NAMES = {COMMIT: b"commit", TREE: b"tree", BLOB: b"blob", TAG: b"tag"}

MODE_FILE = 0o100644
MODE_EXEC = 0o100755
MODE_LINK = 0o120000
MODE_TREE = 0o040000
MODE_GITLINK = 0o160000
MODE_BYTES = {MODE_FILE: b"100644", MODE_EXEC: b"100755", MODE_LINK: b"120000",
              MODE_TREE: b"40000"}

CHUNK = 1 << 20
Entry = tuple[int, bytes, bytes]   # (mode, name, raw id)


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


def tree_sort_key(entry: Entry) -> bytes:
    mode, name, _ = entry
    return name + b"/" if mode == MODE_TREE else name


def encode_tree(entries: Iterable[Entry]) -> bytes:
    """A tree object's body from (mode, name, raw id) entries, in git's order."""
    return b"".join(
        MODE_BYTES[mode] + b" " + name + b"\x00" + sha
        for mode, name, sha in sorted(entries, key=tree_sort_key))


@cache
def _parse_tree() -> Callable[..., Iterable[tuple[bytes, int, bytes]]]:
    # Imported on first use: a snapshot encodes trees but never decodes one.
    from dulwich.objects import parse_tree

    return parse_tree


def decode_tree(body: bytes) -> list[Entry]:
    """(mode, name, raw id) entries of a tree object body; ValueError if it is malformed."""
    unhex = binascii.unhexlify
    try:
        return [(mode, name, unhex(sha)) for name, mode, sha in _parse_tree()(body, 20)]
    except ValueError:
        raise
    except Exception as err:   # dulwich's ObjectFormatException
        raise ValueError(f"malformed tree: {err}") from None


class ChangedWhileReading(Exception):
    """The bytes read for an object no longer hash to the id computed moments before."""
