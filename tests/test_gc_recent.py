"""gc's grace period covers every id handed out recently, even one that wrote no new pack."""

from __future__ import annotations

import os
import time

from undostore import Workspace


def _age_packs(ws: Workspace, seconds: float) -> None:
    old = time.time() - seconds
    for name in os.listdir(ws.store.pack_dir):
        os.utime(os.path.join(ws.store.pack_dir, name), (old, old))


def test_unlisted_snapshot_of_an_old_state_survives_gc_within_the_grace(tree_factory):
    root = tree_factory({"a.txt": "state A\n", "sub": {"b.txt": "b\n"}})
    ws = Workspace(root)
    first = ws.snapshot()                       # state A: its objects land in a pack
    _age_packs(ws, 7200)                        # ... that is now older than the grace period
    (root / "a.txt").write_bytes(b"state B\n")
    ws.snapshot()
    (root / "a.txt").write_bytes(b"state A\n")
    again = ws.snapshot()                       # state A again: nothing new is written
    assert again.id == first.id and again.new_objects == 0
    (root / "a.txt").write_bytes(b"state C\n")
    ws.snapshot()                               # the stat cache now points at state C
    ws.gc(grace_seconds=3600)
    assert ws.verify(again.id).ok, "an id handed out a moment ago must stay restorable"


def test_unlisted_snapshot_older_than_the_grace_is_collected(tree_factory):
    root = tree_factory({"a.txt": "state A\n"})
    ws = Workspace(root)
    first = ws.snapshot()
    (root / "a.txt").write_bytes(b"state B\n")
    ws.snapshot()
    ws.gc(grace_seconds=0)
    ws.store.refresh()
    assert not ws.store.has(bytes.fromhex(first.id)), "nothing lists it, the grace is over"
