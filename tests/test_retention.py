"""Retention: what gc keeps and why, `drop` + `gc` freeing at once, `UNDOSTORE_KEEP_DAYS` and
`UNDOSTORE_MAX_STORE_MB` (real stores, real CLI processes where the contract speaks of the CLI)."""

from __future__ import annotations

import os
from pathlib import Path

from undostore import Workspace


def _store_bytes(ws: Workspace) -> int:
    return sum(p.stat().st_size for p in Path(ws.store.path).rglob("*") if p.is_file())


def test_drop_then_gc_frees_what_only_the_dropped_session_held_at_once(tree_factory):
    root = tree_factory({"shared.txt": "kept by both sessions\n"})
    ws = Workspace(root)
    for i in range(3):
        (root / f"only_s{i}.bin").write_bytes(os.urandom(1 << 20))
        ws.snapshot(session="s")
    ws.undo("s")                                  # a redo entry too, the safety snapshot
    for i in range(3):
        (root / f"only_s{i}.bin").unlink(missing_ok=True)
    kept = ws.snapshot(session="t").id
    before = _store_bytes(ws)
    assert before > 2 << 20
    ws.drop("s")
    result = ws.gc()                               # default grace: no hour to wait
    assert result.freed_bytes > 2 << 20
    assert _store_bytes(ws) < 200_000
    ws.store.refresh()
    assert ws.store.has(bytes.fromhex(kept))
    assert ws.verify().ok


def test_an_id_handed_out_outside_sessions_survives_the_default_gc(tree_factory):
    root = tree_factory({"a.bin": os.urandom(50_000)})
    ws = Workspace(root)
    handed_out = ws.snapshot().id                  # no session: only the recent list knows it
    (root / "a.bin").write_bytes(b"other")
    ws.snapshot(session="s")
    ws.gc()
    ws.store.refresh()
    assert {p for p, _, _ in ws.store.iter_tree_files(bytes.fromhex(handed_out))} == {"a.bin"}
    ws.gc(grace_seconds=0)                         # past its grace, nothing keeps it
    ws.store.refresh()
    assert not ws.store.has(bytes.fromhex(handed_out))
