"""Damage found in a store, recorded so that it never spreads.

`<store>/damaged` lists, one line each, the copies of objects that failed a check
("<hex id> <pack name> <why>"): readers skip those copies, so an object whose only copy is
damaged counts as absent and the next snapshot writes it again from the files. Recording damage
also voids the stat cache, whose entries could vouch for the damaged id.
A pack that fails its open checks is healed under the store lock: if the pack itself is intact
its index is rebuilt; otherwise every object that still checks is copied into a new pack and
the pack moves to `objects/pack/damaged/` (never deleted).
"""

from __future__ import annotations

import hashlib
import os
import time

from undostore.fileio import atomic_write, fsync_dir
from undostore.git.objects import CHUNK, ChangedWhileReading
from undostore.git.packfile import (
    DAMAGED_DIR,
    DELTAS,
    Pack,
    PackDamaged,
    RecordDamaged,
    indexless_packs,
)
from undostore.git.packwriter import PackWriter, reindex
from undostore.store.statcache import DELTA_SUFFIX

DAMAGED_FILE = "damaged"
STAT_CACHE = os.path.join("cache", "statcache")   # in the store (Store.stat_cache_path)


def load(store_path: str) -> set[tuple[bytes, str]]:
    """The damaged copies recorded in a store: (raw id, pack name)."""
    try:
        with open(os.path.join(store_path, DAMAGED_FILE), encoding="utf-8",
                  errors="replace") as f:
            lines = f.read().splitlines()
    except FileNotFoundError:
        return set()
    out = set()
    for line in lines:
        parts = line.split(" ", 2)
        if len(parts) >= 2 and len(parts[0]) == 40:
            try:
                out.add((bytes.fromhex(parts[0]), parts[1]))
            except ValueError:
                continue
    return out


def record(store_path: str, sha: bytes, pack: str, why: str) -> None:
    """Add one damaged copy (appended whole: one short write) and void the stat cache."""
    line = f"{sha.hex()} {pack} {' '.join(why.split())}\n".encode()
    fd = os.open(os.path.join(store_path, DAMAGED_FILE),
                 os.O_WRONLY | os.O_CREAT | os.O_APPEND | getattr(os, "O_BINARY", 0), 0o600)
    try:
        os.write(fd, line)
    finally:
        os.close(fd)
    void_stat_cache(store_path)


def prune(store_path: str, present_packs: set[str]) -> None:
    """Forget recorded copies in packs that are gone (repacked by gc, or moved aside)."""
    path = os.path.join(store_path, DAMAGED_FILE)
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            lines = f.read().splitlines()
    except FileNotFoundError:
        return
    kept = [line for line in lines if len(line.split(" ", 2)) > 1
            and line.split(" ", 2)[1] in present_packs]
    if len(kept) != len(lines):
        atomic_write(path, "".join(line + "\n" for line in kept).encode())


def void_stat_cache(store_path: str) -> None:
    """Delete the stat cache (and the delta saved beside it): the next snapshot hashes all."""
    for name in (STAT_CACHE, STAT_CACHE + DELTA_SUFFIX):
        try:
            os.unlink(os.path.join(store_path, name))
        except OSError:
            pass


def heal_pack(base: str, has_elsewhere) -> tuple[str, int, int]:  # noqa: ANN001
    """Heal one pack that failed its checks (the store lock is held). Returns (what was done:
    "reindexed" or the folder it was moved to, objects saved, objects lost)."""
    if _pack_intact(base + ".pack"):
        try:
            reindex(base + ".pack")
            return "reindexed", 0, 0
        except PackDamaged:
            pass
    saved, lost = salvage(base, has_elsewhere)
    return f"moved to {move_aside(base)}", saved, lost


def _pack_intact(pack_path: str) -> bool:
    """Whether a pack's trailer is the SHA-1 of its bytes (reads the whole pack)."""
    try:
        with open(pack_path, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            if size < 32:
                return False
            digest = hashlib.sha1()
            left = size - 20
            while left > 0:
                block = f.read(min(CHUNK, left))
                if not block:
                    return False
                digest.update(block)
                left -= len(block)
            return digest.digest() == f.read(20)
    except OSError:
        return False


def salvage(base: str, has_elsewhere) -> tuple[int, int]:  # noqa: ANN001
    """Copy every object of a damaged pack that still hash-checks, and that no other pack
    holds, into a new pack; returns (saved, lost). Objects are found through the index when it
    checks, and by reading the pack from its start (ids computed) in any case."""
    try:
        pack = Pack(base, check=False)
    except OSError:
        return 0, 0
    found: dict[bytes, tuple[int, int, int]] = {}   # id -> (type, size, stream start)
    listed: set[bytes] = set()
    if pack.index is not None and pack.index.checksum_ok():
        for position, sha in enumerate(pack.index.name_list()):
            listed.add(sha)
            try:
                type_num, size, header_len = pack.header(pack.index.offset_at(position))
            except RecordDamaged:
                continue
            if type_num not in DELTAS:
                found[sha] = (type_num, size, pack.index.offset_at(position) + header_len)
    for type_num, sha, size, start in pack.scan():
        found.setdefault(sha, (type_num, size, start))
    wanted = {sha for sha in listed | set(found) if not has_elsewhere(sha)}
    saved = 0
    writer = PackWriter(os.path.dirname(base))
    try:
        for sha, (type_num, size, start) in found.items():
            if sha not in wanted:
                continue
            try:
                writer.add_stream(type_num, sha, size, pack.inflate(start, size))
                saved += 1
            except (RecordDamaged, ChangedWhileReading):
                continue   # does not hash to the id the index gives: lost
        writer.commit()
    except BaseException:
        writer.abort()
        raise
    finally:
        pack.close()
    return saved, len(wanted) - saved


def reindex_orphans(pack_dir: str, has_elsewhere) -> list[str]:  # noqa: ANN001
    """Re-index every index-less pack (kept); one that cannot be re-indexed has what still
    checks copied out and is moved aside (lock held)."""
    done = []
    for pack_path in indexless_packs(pack_dir):
        try:
            reindex(pack_path)
            done.append(f"{pack_path}: reindexed")
        except PackDamaged:
            saved, lost = salvage(pack_path[:-5], has_elsewhere)
            done.append(f"{pack_path}: moved to {move_aside(pack_path[:-5])} ({saved} objects "
                        "copied out)")
    return done


def move_aside(base: str) -> str:
    """Move a pack and its index into `damaged/` beside them; returns that folder."""
    folder = os.path.join(os.path.dirname(base), DAMAGED_DIR)
    os.makedirs(folder, exist_ok=True)
    stamp = time.strftime("%Y%m%dT%H%M%S")
    name = os.path.basename(base)
    for ext in (".idx", ".pack"):   # index first: a pack without one is never trusted
        try:
            os.replace(base + ext, os.path.join(folder, f"{name}-{stamp}{ext}"))
        except FileNotFoundError:
            continue
    fsync_dir(os.path.dirname(base))
    return folder
