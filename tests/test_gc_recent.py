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


def test_a_prefix_never_resolves_to_a_folder_of_a_snapshot(tree_factory):
    """Every folder of a snapshot is a tree too; a short prefix naming `docs/`'s tree must
    not be taken for a snapshot (restoring it would replace the whole root)."""
    from undostore.errors import UnknownSnapshotError

    root = tree_factory({"a.txt": "a\n", "docs": {"blob.bin": "x\n"}})
    ws = Workspace(root)
    snap = ws.snapshot().id
    docs = next(sha for mode, name, sha in ws.store.read_tree(bytes.fromhex(snap))
                if name == b"docs")
    assert ws.resolve(snap[:6]).hex() == snap
    try:
        ws.resolve(docs.hex()[:8])
    except UnknownSnapshotError:
        pass
    else:
        raise AssertionError("a folder's tree resolved as a snapshot")


def test_the_stat_cache_stays_useful_after_gc_moves_objects(tree_factory):
    root = tree_factory({"a.txt": "a\n", "d": {"b.txt": "b\n"}})
    old = time.time() - 3600
    for path in (root / "a.txt", root / "d" / "b.txt"):
        os.utime(path, (old, old))
    ws = Workspace(root)
    ws.snapshot(session="s")
    (root / "c.txt").write_bytes(b"c\n")
    os.utime(root / "c.txt", (old, old))
    time.sleep(0.2)  # past the racy window of the files' ctime (set just now by utime)
    ws.snapshot(session="s")
    assert ws.snapshot().hashed == 0
    result = ws.gc(grace_seconds=0)
    assert result.packs_after == 1
    after = ws.snapshot()
    assert after.hashed == 0, "gc kept what the cache vouches for and told it where"
    assert ws.verify(after.id).ok


def test_a_tool_calls_snapshots_are_kept_while_the_activity_record_holds_them(tree_factory):
    """A shell call that changed nothing leaves its end only in the activity record (no note
    lists it, no recent-id write since the call's snapshots stopped writing one): other
    conversations' calls weigh it, so gc keeps it, even with no grace at all."""
    from undostore import ToolCall, Workspace
    from undostore.history import activity
    from undostore.history.toolcall import SHELL

    root = tree_factory({"a.txt": "a0\n", "b.txt": "b0\n"})
    with Workspace(root) as ws:
        ws.snapshot(session="s", label="t1")
        (root / "b.txt").write_text("the user's\n")   # the call's files differ from the point
        ws.call_started(ToolCall("c1", "Bash", SHELL, label="ls"), session="s")
        ws.call_finished("c1", session="s")
        spans = activity.load(ws.store.cache_dir)
        ends = [span.after for span in spans if span.call == "c1"]
        assert ends and ends[0] not in ws.log("s").undo[-1].ids()
        (root / "a.txt").write_text("later\n")
        ws.snapshot()   # the stat cache moves on: it no longer holds the call's end
        ws.gc(grace_seconds=0)
        files = list(ws.store.iter_tree_files(bytes.fromhex(ends[0])))   # its trees, whole
        assert len(files) == 2 and all(ws.store.has(sha) for _path, _mode, sha in files)
