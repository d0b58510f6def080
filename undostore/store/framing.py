"""undostore's own metadata files, framed with an xxhash checksum (`write_framed` /
`read_framed`) and written through `fileio.atomic_write`, so a file damaged by a crash, a full
disk or a stray editor is detected and discarded instead of trusted."""

from __future__ import annotations

import os
import struct
import time
from collections.abc import Iterable
from typing import BinaryIO

import xxhash

from undostore.fileio import atomic_write, atomic_write_with

_MAGIC = b"UNDOSTOR"
_HEADER = struct.Struct("<8s4sQQ")  # magic, kind, payload length, xxh3_64 of kind+payload


def frame(kind: bytes, payload: bytes) -> bytes:
    """Wrap `payload` with a header that lets `unframe` detect truncation and corruption."""
    if len(kind) != 4:
        raise ValueError("kind must be 4 bytes")
    return _HEADER.pack(_MAGIC, kind, len(payload), _digest(kind, payload)) + payload


def frame_digest(kind: bytes, payload: bytes | memoryview) -> int:
    """The checksum `frame` writes for `payload` (what `read_framed_view` hands back)."""
    return _digest(kind, payload)


def _digest(kind: bytes, payload: bytes | memoryview) -> int:
    """xxh3_64 of kind + payload, without copying a large payload to join them."""
    hasher = xxhash.xxh3_64(kind)
    hasher.update(payload)
    return hasher.intdigest()


def unframe(kind: bytes, data: bytes) -> memoryview | None:
    """The payload of a frame made by `frame` (a view into `data`), or None when it is foreign,
    torn or corrupt."""
    if len(data) < _HEADER.size:
        return None
    magic, got_kind, length, digest = _HEADER.unpack_from(data)
    if magic != _MAGIC or got_kind != kind or length != len(data) - _HEADER.size:
        return None
    payload = memoryview(data)[_HEADER.size:]
    if _digest(kind, payload) != digest:
        return None
    return payload


def write_framed(path: str, kind: bytes, payload: bytes, durable: bool = True) -> None:
    atomic_write(path, frame(kind, payload), durable=durable)


def write_framed_parts(path: str, kind: bytes, parts: Iterable[bytes], durable: bool = True
                       ) -> int:
    """As `write_framed` for the payload `b"".join(parts)`, each part written as it comes (a
    large payload is never held whole); the header, which counts and checksums it, goes in
    last, at the front. Returns the checksum (`frame_digest` of the payload)."""
    if len(kind) != 4:
        raise ValueError("kind must be 4 bytes")
    digest = 0

    def fill(f: BinaryIO) -> None:
        nonlocal digest
        f.write(bytes(_HEADER.size))
        hasher = xxhash.xxh3_64(kind)
        length = 0
        for part in parts:
            hasher.update(part)
            f.write(part)
            length += len(part)
        digest = hasher.intdigest()
        f.seek(0)
        f.write(_HEADER.pack(_MAGIC, kind, length, digest))

    atomic_write_with(path, fill, durable=durable)
    return digest


def read_framed(path: str, kind: bytes) -> bytes | None:
    """The payload stored at `path`; None if missing; raises `CorruptFrame` if damaged."""
    found = read_framed_view(path, kind)
    return None if found is None else found[0].tobytes()


def read_framed_view(path: str, kind: bytes) -> tuple[memoryview, int] | None:
    """As `read_framed`, without copying the payload out of the file's bytes (a large cache
    then needs its size once in memory, not twice), with the frame's checksum."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except FileNotFoundError:
        return None
    payload = unframe(kind, data)
    if payload is None:
        raise CorruptFrame(path)
    return payload, _HEADER.unpack_from(data)[3]


class CorruptFrame(Exception):
    """A metadata file failed its checksum or is not of the expected kind."""

    def __init__(self, path: str) -> None:
        self.path = path
        super().__init__(f"{path}: damaged or foreign metadata file (checksum mismatch)")


def quarantine(path: str) -> str:
    """Move a damaged metadata file aside (kept for inspection, never trusted again)."""
    aside = f"{path}.corrupt-{int(time.time())}"
    try:
        os.replace(path, aside)
    except OSError:
        try:
            os.unlink(path)
        except OSError:
            pass
    return aside
