"""gc keeps exactly what journals, anchors, a pending restore and the stat cache need, repacks the
rest into one pack, cleans orphans, and stays correct while another process snapshots."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
import zlib
from pathlib import Path

from undostore import Workspace
from undostore.fileio import TEMP_PREFIX
from undostore.git.objects import BLOB, hash_object
from undostore.git.reader import ObjectReader
from undostore.history.anchors import anchored_ids, anchored_sessions, session_dir
from undostore.history.journal import journal_path
from undostore.history.verify import verify

MB = 1_000_000


def _files(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes()
            for p in sorted(root.rglob("*")) if p.is_file()}


def _snapshot_files(ws: Workspace, snapshot: str) -> dict[str, bytes]:
    """Every file of a snapshot, read back from the store (hash-checked)."""
    return {path: ws.store.read_blob(sha)
            for path, _mode, sha in ws.store.iter_tree_files(bytes.fromhex(snapshot))}


def _store_bytes(ws: Workspace) -> int:
    return sum(p.stat().st_size for p in Path(ws.store.path).rglob("*") if p.is_file())


def _write(root: Path, name: str, text: str) -> None:
    path = root / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def test_gc_with_zero_grace_keeps_listed_snapshots_and_drops_the_rest(tree_factory):
    root = tree_factory({"keep.txt": "always here\n", "d": {"f.txt": "v0\n"}})
    ws = Workspace(root)
    listed: dict[str, dict[str, bytes]] = {}
    for i in range(3):
        _write(root, "d/f.txt", f"listed version {i}\n")
        point = ws.snapshot(session="s", label=f"t{i}")
        listed[point.id] = _files(root)
    _write(root, "d/f.txt", "only in the unlisted snapshot\n")
    unlisted = ws.snapshot().id
    unlisted_blob = dict((p, s) for p, _m, s in ws.store.iter_tree_files(bytes.fromhex(unlisted)))
    _write(root, "d/f.txt", "current\n")
    ws.snapshot()   # the stat cache now describes the current files

    result = ws.gc(grace_seconds=0)

    ws.store.refresh()
    for snapshot, files in listed.items():
        assert _snapshot_files(ws, snapshot) == files
    assert not ws.store.has(bytes.fromhex(unlisted))
    assert not ws.store.has(unlisted_blob["d/f.txt"])
    assert result.freed_bytes > 0
    assert result.packs_after == 1
    assert result.objects_after < result.objects_before
    assert verify(ws.store).ok


def test_default_grace_keeps_a_fresh_unlisted_snapshot(tree_factory):
    root = tree_factory({"a.txt": "1"})
    ws = Workspace(root)
    fresh = ws.snapshot().id
    _write(root, "a.txt", "2")
    ws.snapshot(session="s")
    ws.gc()
    ws.store.refresh()
    assert _snapshot_files(ws, fresh) == {"a.txt": b"1"}


def test_grace_keeps_old_blobs_that_a_fresh_unlisted_snapshot_shares(tree_factory):
    root = tree_factory({"old.txt": "written long ago", "b.txt": "0"})
    ws = Workspace(root)
    ws.snapshot()
    ws.store.close()
    long_ago = time.time() - 7200
    for name in os.listdir(ws.store.pack_dir):   # that first pack is now older than the grace
        os.utime(os.path.join(ws.store.pack_dir, name), (long_ago, long_ago))
    _write(root, "b.txt", "1")
    fresh = ws.snapshot().id                     # new tree, but old.txt's blob is in the old pack
    (root / "old.txt").unlink()
    ws.snapshot()                                # the stat cache no longer lists old.txt
    ws.gc(grace_seconds=3600)
    ws.store.refresh()
    assert _snapshot_files(ws, fresh) == {"b.txt": b"1", "old.txt": b"written long ago"}


def test_session_deleted_on_disk_leaves_no_anchors_after_the_sweep(tree_factory):
    root = tree_factory({"a.txt": "1"})
    ws = Workspace(root)
    ws.snapshot(session="gone")
    _write(root, "a.txt", "2")
    kept = ws.snapshot(session="stays").id
    assert "gone" in anchored_sessions(ws.store)
    os.unlink(journal_path(ws.store, "gone"))

    result = ws.gc(grace_seconds=0)

    assert anchored_sessions(ws.store) == {"stays"}
    assert not os.path.exists(session_dir(ws.store, "gone"))
    assert anchored_ids(ws.store) == {kept}
    assert result.anchors_released == 2   # its turn's before, and its end at "stays"' point


def test_sweep_recreates_a_lost_or_damaged_anchor(tree_factory):
    root = tree_factory({"a.txt": "1"})
    ws = Workspace(root)
    first = ws.snapshot(session="s").id
    _write(root, "a.txt", "2")
    second = ws.snapshot(session="s").id
    os.unlink(os.path.join(session_dir(ws.store, "s"), first))
    with open(os.path.join(session_dir(ws.store, "s"), second), "w") as f:
        f.write("garbage\n")
    result = ws.gc(grace_seconds=0)
    assert result.anchors_created == 2
    for sha in (first, second):
        with open(os.path.join(session_dir(ws.store, "s"), sha)) as f:
            assert f.read() == sha + "\n"


def test_after_dropping_every_session_the_store_holds_little_more_than_the_current_files(
        tree_factory):
    spec = {f"d{i // 50}": {} for i in range(300)}
    for i in range(300):
        spec[f"d{i // 50}"][f"f{i}.txt"] = "".join(f"line {i} {j} of file\n" for j in range(60))
    root = tree_factory(spec)
    ws = Workspace(root)
    for turn in range(12):
        for i in range(turn * 20, turn * 20 + 20):
            _write(root, f"d{i // 50}/f{i}.txt", f"turn {turn} rewrote file {i}\n" * 80)
        ws.snapshot(session=("a", "b")[turn % 2], label=f"turn {turn}")
    before = _store_bytes(ws)
    for session in ws.sessions():
        assert ws.drop(session.name)

    result = ws.gc(grace_seconds=0)

    compressed = sum(len(zlib.compress(data, 1)) for data in _files(root).values())
    after = _store_bytes(ws)
    assert after <= compressed + 1 * MB
    assert result.freed_bytes >= (before - after) * 0.9
    assert ws.sessions() == [] and anchored_ids(ws.store) == set()
    # The stat cache's blobs and trees were kept: the next snapshot is complete.
    _write(root, "d0/f0.txt", "after gc\n")
    again = ws.snapshot(session="new").id
    assert verify(ws.store, again).ok


def test_a_long_lived_workspace_does_not_trust_packs_another_gc_removed(tree_factory):
    # Two Workspace objects stand for two processes: `host` keeps its store open across turns,
    # `cleaner` runs gc in between and prunes objects that `host` saw in packs now deleted.
    root = tree_factory({"a.txt": "X" * 100})
    host, cleaner = Workspace(root), Workspace(root)
    host.snapshot()                                  # unlisted: X and its tree become garbage
    _write(root, "a.txt", "Y" * 100)
    host.snapshot(session="s")
    pruned = cleaner.gc(grace_seconds=0)
    if not pruned.busy_files:   # Windows keeps packs that `host` holds open until a later gc
        assert not cleaner.store.has(hash_object(BLOB, b"X" * 100))
    time.sleep(0.01)
    _write(root, "a.txt", "X" * 100)                 # the pruned content comes back
    again = host.snapshot(session="s").id
    result = verify(cleaner.store, again)
    assert result.ok, (result.missing, result.corrupt)


def test_gc_keeps_the_snapshots_a_pending_restore_needs(tree_factory):
    from undostore.restore.restorelog import RestoreJournal, remove_journal, write_journal

    root = tree_factory({"a.txt": "target content"})
    ws = Workspace(root)
    target = ws.snapshot().id
    _write(root, "a.txt", "safety content")
    safety = ws.snapshot().id
    _write(root, "a.txt", "current")
    ws.snapshot(session="s")
    write_journal(ws.store, RestoreJournal("restore", "00" * 6, target, safety, safety))
    try:
        ws.gc(grace_seconds=0)
        ws.store.refresh()
        assert _snapshot_files(ws, target) == {"a.txt": b"target content"}
        assert _snapshot_files(ws, safety) == {"a.txt": b"safety content"}
    finally:
        remove_journal(ws.store)
    ws.gc(grace_seconds=0)
    ws.store.refresh()
    assert not ws.store.has(bytes.fromhex(target))


def test_many_small_packs_become_one_and_a_second_gc_has_nothing_to_do(tree_factory):
    root = tree_factory({"a.txt": "0"})
    ws = Workspace(root)
    for i in range(8):
        _write(root, "a.txt", str(i + 1))
        ws.snapshot(session="s")
    assert len(ObjectReader(ws.store.pack_dir).packs) >= 8
    first = ws.gc(grace_seconds=0)
    assert first.packs_after == 1 and first.packs_before >= 8
    second = ws.gc(grace_seconds=0)
    assert second.freed_bytes == 0
    assert second.objects_after == first.objects_after
    assert verify(ws.store).ok


def test_orphaned_temporary_files_go_only_after_the_grace_period(tree_factory):
    root = tree_factory({"a.txt": "1"})
    ws = Workspace(root)
    ws.snapshot(session="s")
    stale = [os.path.join(ws.store.pack_dir, f"{TEMP_PREFIX}123-dead.pack"),
             os.path.join(ws.store.sessions_dir, f"{TEMP_PREFIX}1-2-x.journal")]
    junk = os.path.join(ws.store.pack_dir, "pack-" + "0" * 40 + ".pack")   # no index, no pack
    fresh = os.path.join(ws.store.cache_dir, f"{TEMP_PREFIX}9-9-statcache")
    long_ago = time.time() - 7200
    for path in [*stale, fresh, junk]:
        with open(path, "wb") as f:
            f.write(b"x" * 1000)
    for path in [*stale, junk]:
        os.utime(path, (long_ago, long_ago))

    result = ws.gc(grace_seconds=3600)

    assert result.temp_files_removed == 2
    assert not any(os.path.exists(p) for p in stale)
    assert os.path.exists(fresh)
    assert result.freed_bytes >= 2000
    # An index-less pack that cannot be re-indexed is never deleted: it is moved aside.
    assert not os.path.exists(junk) and result.healed_packs[0].startswith(junk + ": moved")
    assert os.listdir(os.path.join(ws.store.pack_dir, "damaged"))


def test_gc_keeps_the_pack_of_a_damaged_live_record_and_reports_it(tree_factory):
    root = tree_factory({"a.txt": "some text that is long enough to damage\n" * 20})
    ws = Workspace(root)
    ws.snapshot(session="s")
    _write(root, "b.txt", "second pack")
    ws.snapshot(session="s")
    blob = next(sha for p, _m, sha in ws.store.iter_tree_files(
        bytes.fromhex(ws.log("s").undo[0].id)) if p == "a.txt")
    with ObjectReader(ws.store.pack_dir) as packs:
        pack, record = packs.record_of(blob)
    with open(pack.pack_path, "r+b") as f:
        f.seek(record.offset + record.length // 2)
        byte = f.read(1)
        f.seek(-1, os.SEEK_CUR)
        f.write(bytes([byte[0] ^ 0xFF]))

    result = ws.gc(grace_seconds=0)

    assert result.damaged == [blob.hex()]
    assert result.kept_packs == [pack.pack_path]
    assert os.path.exists(pack.pack_path) and os.path.exists(pack.idx_path)


_RACER = textwrap.dedent("""
    import os, sys, time
    from undostore import Workspace
    role, root, store, rounds = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    ws = Workspace(root, store)
    print("ready", flush=True)
    go = os.path.join(os.path.dirname(store), "go")
    while not os.path.exists(go):   # start together, so the two really interleave
        time.sleep(0.001)
    for i in range(rounds):
        if role == "snapshot":
            with open(os.path.join(root, "f%d.txt" % (i % 5)), "w") as f:
                f.write("round %d\\n" % i)
            ws.snapshot(session="race", label=str(i))
        else:
            ws.gc(grace_seconds=0)
    print("done", role)
""")


def test_two_processes_racing_snapshot_and_gc_corrupt_nothing(tree_factory, tmp_path):
    root = tree_factory({"f0.txt": "start\n"})
    store = tmp_path / "store"
    Workspace(root, store).close()   # created before the race: creation is not its subject
    script = tmp_path / "racer.py"
    script.write_text(_RACER)
    env = dict(os.environ, UNDOSTORE_UNDO_LIMIT="8", UNDOSTORE_GC_EVERY="0")
    procs = [subprocess.Popen([sys.executable, str(script), role, str(root), str(store), n],
                              env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
             for role, n in (("snapshot", "30"), ("gc", "15"))]
    for proc in procs:
        assert proc.stdout.readline().strip() == b"ready"
    (tmp_path / "go").touch()
    for proc in procs:
        out, err = proc.communicate(timeout=180)
        assert proc.returncode == 0, err.decode()
        assert b"done" in out

    ws = Workspace(root, store)
    log = ws.log("race")
    assert [p.label for p in log.undo] == [str(i) for i in range(29, 21, -1)]
    result = verify(ws.store)
    assert result.ok, (result.missing, result.corrupt)
    assert len(result.snapshots) == len({p.id for p in log.undo})
    ws.gc(grace_seconds=0)
    assert verify(ws.store).ok
