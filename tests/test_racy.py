"""The stat cache never hides a change: racy timestamps, restored mtimes, damaged or foreign caches.

The cache lets an unchanged file go unread; these tests hold that it is trusted only when that is
safe. The reference id of a tree is computed without any cache (a fresh store), or from the bytes
themselves with hashlib.
"""

from __future__ import annotations

import hashlib
import marshal
import os
import shutil
import sys
import time
from pathlib import Path

import pytest

from undostore import Workspace
from undostore.store.framing import write_framed
from undostore.store.statcache import FINE_MARGIN_NS

# An mtime long ago, deliberately not on a whole second: whole-second mtimes mark a coarse file
# system, whose racy window is seconds long.
OLD_NS = 1_600_000_000_123_456_789
CACHE = ("cache", "statcache")


def git_id(kind: bytes, body: bytes) -> bytes:
    return hashlib.sha1(kind + b" %d\x00" % len(body) + body).digest()


def one_file_tree_id(name: str, content: bytes) -> str:
    """git's tree id of a folder holding one regular file, computed from first principles."""
    blob = git_id(b"blob", content)
    return git_id(b"tree", b"100644 " + name.encode() + b"\x00" + blob).hex()


def make_old(*paths: Path) -> None:
    for path in paths:
        os.utime(path, ns=(OLD_NS, OLD_NS))


def wait_past_ctime_margin() -> None:
    """Files just written have a ctime of now: let it age past the racy window."""
    time.sleep(3 * FINE_MARGIN_NS / 1e9)


def reference_id(root: Path, tmp_path: Path) -> str:
    fresh = tmp_path / f"fresh-{time.monotonic_ns()}"
    with Workspace(root, store=fresh) as ws:
        result = ws.snapshot()
    assert result.hashed == result.files
    return result.id


@pytest.fixture
def old_tree(tmp_path: Path) -> tuple[Path, Path]:
    """A tree whose files are old and settled, already captured once into its store."""
    root = tmp_path / "tree"
    (root / "sub").mkdir(parents=True)
    files = [root / "a.txt", root / "b.bin", root / "sub" / "c.txt"]
    for i, path in enumerate(files):
        path.write_bytes(f"content {i}\n".encode() * (i + 1))
    make_old(*files)
    wait_past_ctime_margin()
    store = tmp_path / "store"
    with Workspace(root, store=store) as ws:
        assert ws.snapshot().hashed == 3
    return root, store


def test_write_then_snapshot_in_a_tight_loop_always_sees_the_change(tmp_path: Path):
    root = tmp_path / "tree"
    root.mkdir()
    path = root / "f"
    seen: list[str] = []
    with Workspace(root, store=tmp_path / "store") as ws:
        for i in range(100):
            content = b"%08d" % i  # same size every time
            path.write_bytes(content)
            result = ws.snapshot()
            assert result.id == one_file_tree_id("f", content), f"iteration {i}"
            seen.append(result.id)
    assert len(set(seen)) == 100


@pytest.mark.skipif(sys.platform == "win32", reason=(
    "Windows' st_ctime is the creation time: a same-size rewrite with a restored mtime leaves "
    "no trace in stat there (git has the same blind spot)"))
def test_same_size_rewrite_with_restored_mtime_is_seen_by_ctime(old_tree: tuple[Path, Path]):
    root, store = old_tree
    target = root / "a.txt"
    with Workspace(root, store=store) as ws:
        before = ws.snapshot()
        assert before.hashed == 0, "settled files come from the cache"
        old = target.read_bytes()
        target.write_bytes(b"X" * len(old))
        make_old(target)  # same size, same mtime: only ctime (and content) differ
        assert target.stat().st_mtime_ns == OLD_NS
        after = ws.snapshot()
    assert after.hashed == 1
    assert after.id != before.id


@pytest.mark.skipif(sys.platform == "win32", reason=(
    "Windows: directory listings carry no inode and a replaced file can keep the old creation "
    "time (st_ctime there), so as for git on Windows only mtime and size tell"))
def test_replaced_file_with_same_size_and_mtime_is_seen(old_tree: tuple[Path, Path],
                                                         tmp_path: Path):
    root, store = old_tree
    target = root / "sub" / "c.txt"
    replacement = root / "sub" / "new.tmp"
    replacement.write_bytes(b"Y" * target.stat().st_size)
    make_old(replacement)
    os.replace(replacement, target)  # a new inode under the old name (editors save like this)
    with Workspace(root, store=store) as ws:
        result = ws.snapshot()
    assert result.id == reference_id(root, tmp_path)


def test_unchanged_old_tree_hashes_nothing_the_second_time(old_tree: tuple[Path, Path],
                                                           tmp_path: Path):
    root, store = old_tree
    with Workspace(root, store=store) as ws:
        second = ws.snapshot()
        third = ws.snapshot()
    assert (second.hashed, third.hashed) == (0, 0)
    assert second.files == 3
    assert second.id == third.id == reference_id(root, tmp_path)


def _flip_a_cached_blob_id(cache: Path, blob_ids: list[bytes]) -> None:
    data = bytearray(cache.read_bytes())
    at = -1
    for sha in blob_ids:
        at = data.find(sha)
        if at != -1:
            break
    assert at != -1, "the cache holds the blob ids of its files"
    data[at + 5] ^= 0xFF
    cache.write_bytes(bytes(data))


def _damage(kind: str, cache: Path, blob_ids: list[bytes]) -> None:
    if kind == "flipped blob id":
        _flip_a_cached_blob_id(cache, blob_ids)
    elif kind == "truncated":
        cache.write_bytes(cache.read_bytes()[: cache.stat().st_size // 2])
    elif kind == "empty":
        cache.write_bytes(b"")
    elif kind == "foreign bytes":
        cache.write_bytes(os.urandom(200))
    elif kind == "another kind of frame":
        write_framed(str(cache), b"JRNL", cache.read_bytes())
    elif kind == "another format version":
        # A well-framed cache claiming every file is empty: trusted, it would give wrong ids.
        bogus = {p: (OLD_NS, OLD_NS, 0, 0, 0o100644, 0o100644, git_id(b"blob", b""))
                 for p in ("a.txt", "b.bin", "sub/c.txt")}
        write_framed(str(cache), b"STAT", marshal.dumps(((999, 0, "other"), bogus, {})))
    elif kind == "a folder":
        cache.unlink()
        cache.mkdir()
    else:
        raise AssertionError(kind)


@pytest.mark.parametrize("kind", ["flipped blob id", "truncated", "empty", "foreign bytes",
                                  "another kind of frame", "another format version",
                                  "a folder"])
def test_damaged_or_foreign_cache_is_discarded(kind: str, old_tree: tuple[Path, Path],
                                               tmp_path: Path):
    root, store = old_tree
    cache = store.joinpath(*CACHE)
    assert cache.is_file()
    with Workspace(root, store=store) as ws:
        good = ws.snapshot()
        blob_ids = [sha for _, _, sha in ws.store.iter_tree_files(bytes.fromhex(good.id))]
    _damage(kind, cache, blob_ids)
    with Workspace(root, store=store) as ws:
        result = ws.snapshot()
        assert result.id == good.id == reference_id(root, tmp_path)
        assert result.hashed == 3, "nothing from a damaged cache is trusted"
        again = ws.snapshot()  # and a sound cache replaces it
    assert again.hashed == 0 and again.id == good.id


def test_damaged_cache_is_reported_as_a_warning(old_tree: tuple[Path, Path]):
    root, store = old_tree
    store.joinpath(*CACHE).write_bytes(os.urandom(64))
    with Workspace(root, store=store) as ws:
        result = ws.snapshot()
    assert any("stat cache" in message for _, message in result.warnings)


def test_cache_copied_from_another_store_is_not_trusted(old_tree: tuple[Path, Path],
                                                        tmp_path: Path):
    """A cache names blob and tree ids of its own store; another store may lack them all, so
    a snapshot there must still write every object its id needs."""
    root, store = old_tree
    other = tmp_path / "other-store"
    with Workspace(root, store=other):
        pass
    shutil.copy(store.joinpath(*CACHE), other.joinpath(*CACHE))
    with Workspace(root, store=other) as ws:
        result = ws.snapshot()
        assert result.id == reference_id(root, tmp_path)
        # Every object the id names is present and intact in this store.
        files = list(ws.store.iter_tree_files(bytes.fromhex(result.id)))
        assert len(files) == 3
        for _, _, sha in files:
            ws.store.read_blob(sha)


def test_cache_is_not_trusted_once_a_pack_it_relied_on_is_deleted(tmp_path: Path):
    """Deleting a pack by hand must not let a snapshot hand out an id whose blobs are gone."""
    root = tmp_path / "tree"
    (root / "sub").mkdir(parents=True)
    (root / "a.txt").write_bytes(b"a\n")
    (root / "sub" / "b.txt").write_bytes(b"b\n")
    make_old(root / "a.txt")
    make_old(root / "sub" / "b.txt")
    store = tmp_path / "store"
    with Workspace(root, store=store) as ws:
        first = ws.snapshot()
        ws.snapshot()                       # the cache now vouches for both blobs
        (root / "c.txt").write_bytes(b"c\n")
        ws.snapshot()                       # a second pack, holding c.txt and new trees
    packs = sorted((store / "objects" / "pack").glob("*.pack"), key=os.path.getmtime)
    packs[0].unlink()                       # the pack with a.txt and b.txt
    packs[0].with_suffix(".idx").unlink()
    with Workspace(root, store=store) as ws:
        result = ws.snapshot()
        assert ws.verify(result.id).ok, "every object of the id handed out is in the store"
    assert first.id != result.id
