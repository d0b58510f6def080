"""verify finds missing and damaged objects, names the snapshot and the path, reads large blobs in
constant memory, and checks only the named snapshot when given one."""

from __future__ import annotations

import inspect
import os
import sys
import tracemalloc
from pathlib import Path

import pytest

from undostore import Workspace
from undostore.errors import UnknownSnapshotError
from undostore.git.objects import (
    BLOB,
    MODE_FILE,
    MODE_TREE,
    TREE,
    encode_tree,
    hash_object,
)
from undostore.git.reader import ObjectReader
from undostore.history.sessions import record_undo_point
from undostore.history.verify import verify

from .conftest import write_objects


def _blob_of(ws: Workspace, snapshot: str, path: str) -> bytes:
    return next(sha for p, _mode, sha in ws.store.iter_tree_files(bytes.fromhex(snapshot))
                if p == path)


def _flip_byte_in_record(ws: Workspace, sha: bytes) -> None:
    with ObjectReader(ws.store.pack_dir) as packs:
        pack, record = packs.record_of(sha)
    with open(pack.pack_path, "r+b") as f:
        f.seek(record.offset + record.length - 3)
        byte = f.read(1)
        f.seek(-1, os.SEEK_CUR)
        f.write(bytes([byte[0] ^ 0x55]))


def test_a_healthy_store_verifies(tree_factory):
    root = tree_factory({"a.txt": "1", "d": {"b.txt": "2", "e": {"c.txt": "3"}}})
    ws = Workspace(root)
    first = ws.snapshot(session="s").id
    (root / "a.txt").write_text("changed")
    second = ws.snapshot(session="t").id
    result = verify(ws.store)
    assert result.ok and not result.missing and not result.corrupt
    assert sorted(result.snapshots) == sorted({first, second})
    # 2 root trees + d + d/e, and 4 distinct blobs; each is checked once.
    assert result.checked == 8


def test_a_missing_blob_is_reported_by_snapshot_and_path(tree_factory):
    root = tree_factory({"real.txt": "present"})
    ws = Workspace(root)
    ws.snapshot()
    present = hash_object(BLOB, b"present")
    ghost = hash_object(BLOB, b"never stored")
    sub = encode_tree([(MODE_FILE, b"ghost.txt", ghost)])
    top = encode_tree([(MODE_FILE, b"real.txt", present),
                       (MODE_TREE, b"dir", hash_object(TREE, sub))])
    _, top_id = write_objects(ws.store, [(TREE, sub), (TREE, top)])
    with ws.store.lock:
        record_undo_point(ws.store, "s", top_id, "crafted", None)

    result = verify(ws.store)

    assert not result.ok
    assert [(p.snapshot, p.path, p.id) for p in result.missing] == [
        (top_id, "dir/ghost.txt", ghost.hex())]
    assert result.corrupt == []


def test_a_damaged_blob_is_reported_under_every_snapshot_that_holds_it(tree_factory):
    root = tree_factory({"shared": {"big.txt": "shared content line\n" * 200}, "x": "0"})
    ws = Workspace(root)
    first = ws.snapshot(session="s").id
    (root / "x").write_text("1")
    second = ws.snapshot(session="s").id
    blob = _blob_of(ws, first, "shared/big.txt")
    _flip_byte_in_record(ws, blob)

    result = verify(ws.store)

    assert not result.ok and result.missing == []
    assert sorted((p.snapshot, p.path) for p in result.corrupt) == sorted(
        [(first, "shared/big.txt"), (second, "shared/big.txt")])
    assert result.corrupt[0].id == blob.hex()


def test_a_missing_snapshot_tree_is_reported_at_the_root(tree_factory):
    root = tree_factory({"a": "1"})
    ws = Workspace(root)
    ws.snapshot()
    absent = "1234567890" * 4
    with ws.store.lock:
        record_undo_point(ws.store, "s", absent, None, None)
    result = verify(ws.store)
    assert [(p.snapshot, p.path, p.reason) for p in result.missing] == [
        (absent, "", "not in the store")]


def test_verify_of_one_id_checks_only_that_snapshot(tree_factory):
    root = tree_factory({"a.txt": "one"})
    ws = Workspace(root)
    first = ws.snapshot(session="s").id
    (root / "a.txt").write_text("two")
    second = ws.snapshot(session="s").id
    _flip_byte_in_record(ws, _blob_of(ws, second, "a.txt"))
    assert verify(ws.store, first[:8]).ok
    bad = verify(ws.store, second)
    assert not bad.ok and bad.snapshots == [second]
    with pytest.raises(UnknownSnapshotError):
        verify(ws.store, "ffff")


def test_large_blob_is_verified_in_constant_memory(tree_factory):
    root = tree_factory({})
    (root / "big.bin").write_bytes(os.urandom(24 << 20))
    ws = Workspace(root)
    ws.snapshot(session="s")
    tracemalloc.start()
    try:
        result = verify(ws.store)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert result.ok and result.checked == 2
    assert peak < 8 << 20, f"peak {peak} bytes while verifying a 24 MiB blob"


def test_deep_folders_do_not_hit_the_recursion_limit(tmp_path):
    root = tmp_path / "root"
    deep = root
    for _ in range(120):   # deeper than the walk needs for the point, cheap on every system
        deep = deep / "d"
    deep.mkdir(parents=True)
    (deep / "leaf.txt").write_text("x")
    ws = Workspace(root)
    ws.snapshot(session="s")
    old = sys.getrecursionlimit()
    # A little headroom above the current depth: a verify that recursed per folder would need
    # 120 more frames.
    sys.setrecursionlimit(len(inspect.stack(0)) + 40)
    try:
        result = verify(ws.store)
    finally:
        sys.setrecursionlimit(old)
    assert result.ok and result.checked == 122


def test_verify_with_no_sessions_checks_nothing_and_is_ok(tree_factory):
    ws = Workspace(tree_factory({"a": "1"}))
    ws.snapshot()
    result = verify(ws.store)
    assert result.ok and result.checked == 0 and result.snapshots == []


def test_missing_pack_file_reports_every_object_of_that_snapshot(tree_factory):
    root = tree_factory({"a.txt": "1", "b.txt": "2"})
    ws = Workspace(root)
    snapshot = ws.snapshot(session="s").id
    ws.store.close()
    for name in os.listdir(ws.store.pack_dir):
        os.unlink(Path(ws.store.pack_dir) / name)
    result = verify(ws.store)
    assert [(p.path, p.id) for p in result.missing] == [("", snapshot)]
