"""A restore and the stat cache: a small restore checks the files it touches by hashing them and
leaves the cache as the safety snapshot saved it; a large one loads it, and records what it wrote.
Either way the next snapshot is exactly the target (checked against a store with no cache)."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from undostore import Workspace
from undostore.errors import ConflictError
from undostore.git.objects import MODE_FILE
from undostore.limits import DEFAULT_LIMITS
from undostore.restore.cachechoice import record_written, uses_cache
from undostore.restore.context import CheckoutResult
from undostore.restore.plan import Entry, RestorePlan
from undostore.store.statcache import (
    FINE_MARGIN_NS,
    FINGERPRINT,
    StatCache,
    record_entries,
)

from .conftest import IS_WINDOWS, make_tree

HASH_AT_MOST = DEFAULT_LIMITS.restore_hash_at_most   # paths a restore hashes without the cache


def _cache_identity(store: Path) -> list[tuple[str, int, int]]:
    """The stat cache's files (its base and any delta beside it), as they are on disk."""
    folder = store / "cache"
    return sorted((name, os.stat(folder / name).st_ino, os.stat(folder / name).st_mtime_ns)
                  for name in os.listdir(folder) if name.startswith("statcache"))


def _fresh_id(root: Path, tmp_path: Path) -> str:
    with Workspace(root, tmp_path / f"fresh-{time.monotonic_ns()}") as ws:
        return ws.snapshot().id


def _two_states(root: Path, files: int, changed: int) -> tuple[Workspace, str]:
    """A workspace whose files differ from snapshot A (returned) in `changed` of `files`."""
    for i in range(files):
        folder = root / f"d{i % 10}"
        folder.mkdir(exist_ok=True)
        (folder / f"f{i}.txt").write_text(f"file {i}\n")
    ws = Workspace(root, root.parent / "store")
    a = ws.snapshot().id
    for i in range(changed):
        (root / f"d{i % 10}" / f"f{i}.txt").write_text(f"changed {i}\n")
    time.sleep(3 * FINE_MARGIN_NS / 1e9)
    ws.snapshot()
    return ws, a


@pytest.mark.skipif(sys.platform == "win32", reason=(
    "Windows always goes through the stat cache: it holds the exec bit the disk cannot"))
def test_a_small_restore_leaves_the_stat_cache_as_the_safety_snapshot_saved_it(tmp_path):
    root = tmp_path / "root"
    root.mkdir()
    ws, a = _two_states(root, files=200, changed=10)
    before = _cache_identity(tmp_path / "store")
    result = ws.restore(a)
    assert len(result.modified) == 10
    assert _cache_identity(tmp_path / "store") == before
    again = ws.snapshot()
    assert again.id == a == _fresh_id(root, tmp_path)
    assert again.hashed == 10          # the restored files, read once by the next snapshot
    ws.close()


def test_a_large_restore_records_what_it_wrote(tmp_path):
    root = tmp_path / "root"
    root.mkdir()
    ws, a = _two_states(root, files=HASH_AT_MOST + 100, changed=HASH_AT_MOST + 50)
    before = _cache_identity(tmp_path / "store")
    ws.restore(a)
    assert _cache_identity(tmp_path / "store") != before
    assert ws.snapshot().id == a == _fresh_id(root, tmp_path)
    ws.close()


def test_a_file_changed_after_the_safety_snapshot_is_caught_without_the_cache(tmp_path):
    """The conflict rule holds when the checks hash instead of asking the cache."""
    root = tmp_path / "root"
    root.mkdir()
    ws, a = _two_states(root, files=20, changed=3)
    seen = []

    def meddle(plan: RestorePlan) -> bool:   # after the safety snapshot, before any change
        (root / "d1" / "f1.txt").write_text("changed 1\n".upper())
        seen.append(plan)
        return True

    with pytest.raises(ConflictError) as caught:
        ws.restore(a, confirm=meddle)
    assert caught.value.path == "d1/f1.txt" and seen
    assert (root / "d1" / "f1.txt").read_text() == "CHANGED 1\n"
    ws.close()


def test_windows_always_uses_the_cache_for_the_modes_it_keeps():
    small = RestorePlan(target="t", safety="s", modify=["a"])
    assert not uses_cache(small, windows=False)
    assert uses_cache(small, windows=True)
    large = RestorePlan(target="t", safety="s", create=[f"f{i}" for i in range(HASH_AT_MOST + 1)])
    assert uses_cache(large, windows=False)


RECORDING = DEFAULT_LIMITS._replace(restore_hash_at_most=0)   # every restore records its writes


def _listed_by_walks(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The folders every `os.scandir` from now on reads."""
    listed: list[str] = []
    real = os.scandir

    def scandir(path: str = ".") -> object:
        listed.append(os.fspath(path))
        return real(path)

    monkeypatch.setattr(os, "scandir", scandir)
    return listed


def test_after_a_recorded_restore_only_the_folders_it_changed_are_listed_again(
        tmp_path, git, monkeypatch):
    """A folder whose files a restore changed is listed again by the next snapshot; the
    folders below it keep their listings while its `.gitignore` is unchanged (they were all
    listed again before, each restore costing a walk of everything below what it touched)."""
    root = make_tree(tmp_path / "root", {"a": {"f.txt": "1", "b": {"y.txt": "y",
                                                                  "c": {"z.txt": "z"}}}})
    with Workspace(root, store=tmp_path / "store", limits=RECORDING) as ws:
        first = ws.snapshot().id
        (root / "a" / "f.txt").write_text("2")
        time.sleep(0.2)   # out of the racy window: every listing is recorded as trusted
        ws.snapshot()
        time.sleep(0.2)
        ws.restore(first)
        listed = _listed_by_walks(monkeypatch)
        assert ws.snapshot().id == first == git.write_tree(root)
    assert [os.path.relpath(p, root) for p in listed] == ["a"]


def test_a_recorded_restore_that_rewrites_a_gitignore_has_the_folders_below_read_again(
        tmp_path, git):
    """The folders below keep their listings only while the `.gitignore` above is the one they
    were read under: a restore that rewrites it gives it a new inode, so they are read again
    and a file the old rules ignored is captured."""
    root = make_tree(tmp_path / "root", {"a": {".gitignore": "", "f.txt": "1",
                                               "b": {"y.txt": "y"}}})
    with Workspace(root, store=tmp_path / "store", limits=RECORDING) as ws:
        plain = ws.snapshot().id
        (root / "a" / ".gitignore").write_text("*.log\n")
        (root / "a" / "b" / "x.log").write_text("x")   # ignored from now on
        time.sleep(0.2)   # out of the racy window: a/b's listing is recorded as trusted
        ws.snapshot()
        time.sleep(0.2)
        ws.restore(plain)   # the rules of `plain` again; x.log, ignored until now, stays
        assert (root / "a" / "b" / "x.log").exists()
        assert ws.snapshot().id == git.write_tree(root) != plain


PAUSE_S = 3 * FINE_MARGIN_NS / 1e9   # past it, the stat cache trusts a file written before


def _restore_pausing(ws: Workspace, snapshot_id: str | None) -> None:
    """Restore (None: abort the pending one), pausing after each rename: nothing it wrote is
    racy when it records it."""
    ws.checkpoint = lambda what, path: time.sleep(PAUSE_S) if what == "replace" else None
    try:
        if snapshot_id is None:
            ws.abort_restore()
        else:
            ws.restore(snapshot_id)
    finally:
        ws.checkpoint = None


def _trees_encoded(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many trees every snapshot from now on encodes (one count a call)."""
    from undostore.snapshot import capture

    counted: list[int] = []
    real = capture.encode_tree

    def encode_tree(entries: list) -> bytes:
        counted.append(1)
        return real(entries)

    monkeypatch.setattr(capture, "encode_tree", encode_tree)
    return counted


NESTED = {"a": {"f.txt": "1", "g.txt": "g", "b": {"y.txt": "y", "c": {"w.txt": "w", "z.txt": "z"}}},
          "d": {"k.txt": "k"}, "top.txt": "t"}


def _changed_by_hand(root: Path) -> None:
    (root / "a" / "f.txt").write_text("2")
    (root / "a" / "b" / "c" / "w.txt").write_text("ww")
    (root / "a" / "b" / "c" / "z.txt").write_text("zz")
    (root / "d" / "added.txt").write_text("a")   # the restore deletes it
    (root / "d" / "k.txt").write_text("kk")


def _changed_and_restored(ws: Workspace, root: Path) -> str:
    """Snapshot A, the changes by hand, a snapshot, then A restored (nothing racy): A's id."""
    first = ws.snapshot().id
    _changed_by_hand(root)
    time.sleep(PAUSE_S)
    ws.snapshot()
    _restore_pausing(ws, first)
    time.sleep(PAUSE_S)
    return first


@pytest.mark.skipif(sys.platform == "win32", reason=(
    "the folders holding mode-only entries are hashed again on Windows (no exec bit on disk)"))
def test_a_recorded_restore_leaves_the_target_trees_so_the_next_snapshot_encodes_the_root_only(
        tmp_path, monkeypatch):
    """The folders a restore changed keep the target's tree ids in the stat cache: the next
    snapshot, finding every entry as recorded, encodes only the root (it re-encoded every
    changed folder and those above, ~900 trees after 2,000 files of the 20k tree). A folder
    where it created a file is encoded again (`cachechoice`: such a file is checked against
    the ignore rules of the next snapshot); here it deletes and rewrites only."""
    root = make_tree(tmp_path / "root", NESTED)
    with Workspace(root, store=tmp_path / "store", limits=RECORDING) as ws:
        first = _changed_and_restored(ws, root)
        encoded = _trees_encoded(monkeypatch)
        again = ws.snapshot()
        assert (again.id, again.hashed, len(encoded)) == (first, 0, 1)
    assert _fresh_id(root, tmp_path) == first


@pytest.mark.parametrize("change", ["edit", "same-size-edit", "add", "delete", "exec-bit",
                                    "nested-add", "folder-added", "none"])
def test_a_change_after_a_recorded_restore_is_seen_in_the_folders_it_left_trees_for(
        tmp_path, change):
    """The target's tree ids a restore leaves are trusted only while every file and listing
    below matches what it recorded: any change there gives the id a fresh store gives."""
    root = make_tree(tmp_path / "root", NESTED)
    with Workspace(root, store=tmp_path / "store", limits=RECORDING) as ws:
        first = _changed_and_restored(ws, root)
        c = root / "a" / "b" / "c"
        if change == "edit":
            (c / "z.txt").write_text("changed since")
        elif change == "same-size-edit":
            (c / "z.txt").write_text("Z")
        elif change == "add":
            (root / "a" / "new.txt").write_text("new")
        elif change == "delete":
            (root / "a" / "f.txt").unlink()
        elif change == "exec-bit":
            if sys.platform == "win32":
                pytest.skip("no exec bit on Windows")
            os.chmod(c / "z.txt", 0o755)
        elif change == "nested-add":
            (c / "deeper.txt").write_text("d")
        elif change == "folder-added":
            (c / "e").mkdir()
            (c / "e" / "w.txt").write_text("w")
        got = ws.snapshot().id
    assert got == _fresh_id(root, tmp_path)
    assert (got == first) == (change == "none")


def test_an_abort_that_keeps_a_file_changed_after_the_crash_leaves_no_tree_id_for_it(
        tmp_path):
    """An abort puts back only what the crashed restore touched and keeps a file someone
    changed since: its folders are at neither tree, so it leaves them no tree id (only a fresh
    restore's plan makes every change between its two trees) and the next snapshot captures
    the changed file."""
    root = make_tree(tmp_path / "root", NESTED)
    with Workspace(root, store=tmp_path / "store", limits=RECORDING) as ws:
        first = ws.snapshot().id
        _changed_by_hand(root)
        time.sleep(PAUSE_S)
        ws.snapshot()
        deep = "a/b/c/z.txt"

        def crash(what: str, path: str) -> None:
            if what == "replace" and path == deep:
                raise SystemExit("killed")   # the process dies: the restore stays pending

        ws.checkpoint = crash
        with pytest.raises(SystemExit):
            ws.restore(first)
        assert ws.pending_restore() is not None
        (root / deep).write_text("someone else's")   # after the crash: the abort keeps it
        time.sleep(PAUSE_S)
        _restore_pausing(ws, None)
        time.sleep(PAUSE_S)
        got = ws.snapshot().id
    assert (root / deep).read_text() == "someone else's"
    assert got == _fresh_id(root, tmp_path)


def _recorded_after(tmp_path: Path, stamps: dict[str, int], last_stamp: int | None,
                    now_ns: int) -> dict[str, int]:
    """The sizes `record_written` keeps for files a restore wrote with these ctimes (-1: the
    mode only, racy)."""
    root = make_tree(tmp_path / "root", {"d": {name: name for name in stamps}})
    time.sleep(PAUSE_S)   # out of the racy window: the snapshot records every file
    with Workspace(root, store=tmp_path / "store") as ws:
        ws.snapshot()
        cache = StatCache.load(ws.store.stat_cache_path, ws.store.identity)
    paths = [f"d/{name}" for name in stamps]
    entries = record_entries(cache.records["d"])
    after = {p: Entry(MODE_FILE, entries[p[2:]].blob_id) for p in paths}
    plan = RestorePlan(target="t", safety="s", modify=paths, before=dict(after), after=after)
    written = {f"d/{name}": FINGERPRINT.pack(ns, ns, 1, i + 1, 0o100644)
               for i, (name, ns) in enumerate(stamps.items())}
    records, _ = record_written(cache, plan, written, [], now_ns, last_stamp=last_stamp)
    return {name: entry.size for name, entry in record_entries(records["d"]).items()}


def test_a_written_file_stamped_before_the_restores_last_change_is_trusted(tmp_path):
    """git's rule against its index file's mtime: once the file system stamped a later change
    of the restore, the tick a file was written in is over, whatever the clock's margin says;
    the file stamped with the last change itself stays racy (hashed by the next snapshot)."""
    now = time.time_ns()
    early, last = now - 20_000_000, now - 5_000_000   # both within the 50 ms margin
    stamped = _recorded_after(tmp_path / "one", {"a.txt": early, "b.txt": last}, last, now)
    assert stamped == {"a.txt": 1, "b.txt": -1}
    # Without a stamp to go by (changes on two devices, or Windows), the margin decides alone.
    margin = _recorded_after(tmp_path / "two", {"a.txt": early, "b.txt": last}, None, now)
    assert margin == {"a.txt": -1, "b.txt": -1}


def test_the_last_stamp_counts_only_the_restores_own_changes_on_one_device():
    def st(ctime: int, dev: int) -> SimpleNamespace:
        return SimpleNamespace(st_mtime_ns=ctime, st_ctime_ns=ctime, st_size=1, st_ino=ctime,
                               st_mode=0o100644, st_uid=0, st_gid=0, st_dev=dev)

    result = CheckoutResult(own=(0, 0))
    result.keep("a", st(100, dev=1))
    result.keep("found", st(900, dev=1), changed=False)   # already as wanted: not its stamp
    assert result.last_stamp() == (None if IS_WINDOWS else 100)
    result.keep("b", st(50, dev=2), changed=False)          # a mount point below the root
    assert result.last_stamp() is None


@pytest.mark.parametrize("where", ["beside-the-edit", "in-a-sub-folder"])
def test_a_folder_holding_a_file_undostoreignore_keeps_out_keeps_no_target_tree(
        tmp_path, where):
    """The target lists a file the root's `.undostoreignore` now keeps out (the restore leaves
    it alone): the folders holding it are not at the target's trees, so they keep none (the
    next snapshot said the files were at the target, the excluded log included)."""
    logs = "F" if where == "beside-the-edit" else "F/S"
    root = make_tree(tmp_path / "root", {"F": {"a.txt": "a1", "S": {"k.txt": "k"}}})
    (root / logs / "x.log").write_text("log")
    time.sleep(PAUSE_S)   # every file recorded: none hashed again hides a wrong tree id
    with Workspace(root, store=tmp_path / "store", limits=RECORDING) as ws:
        first = ws.snapshot().id
        (root / ".undostoreignore").write_text("*.log\n/.undostoreignore\n")
        (root / "F" / "a.txt").write_text("a2")
        time.sleep(PAUSE_S)
        ws.snapshot()
        _restore_pausing(ws, first)
        time.sleep(PAUSE_S)
        got = ws.snapshot().id
    assert (root / logs / "x.log").exists()
    assert got == _fresh_id(root, tmp_path) != first


def test_a_target_written_with_the_legacy_file_mode_leaves_no_tree_of_it(tmp_path):
    """Old git wrote plain files as 100664; a restore writes such a file as 100644, so the
    folder's snapshot is not the target's tree id and the restore leaves none for it."""
    from undostore.git.objects import BLOB, hash_object

    from .restore_support import craft_snapshot

    root = make_tree(tmp_path / "root", {"F": {"a.txt": "a1", "b.txt": "b"}})
    time.sleep(PAUSE_S)   # every file recorded: none hashed again hides a wrong tree id
    with Workspace(root, store=tmp_path / "store", limits=RECORDING) as ws:
        ws.snapshot()
        legacy = craft_snapshot(ws.store, {"F": {
            "a.txt": b"a2", "b.txt": ("raw", b"100664", hash_object(BLOB, b"b"))}})
        ws.store.refresh()
        _restore_pausing(ws, legacy)
        time.sleep(PAUSE_S)
        got = ws.snapshot().id
    assert got == _fresh_id(root, tmp_path) != legacy


@pytest.mark.parametrize("odd", ["zero-padded-file-mode", "zero-padded-folder-mode",
                                 "out-of-order"])
def test_a_target_tree_not_in_the_form_a_snapshot_encodes_is_left_to_the_next_snapshot(
        tmp_path, odd):
    """A tree only another program writes (git's fsck: zeroPaddedFilemode, treeNotSorted) has
    an id no snapshot of the same files has: the restore leaves no such id for its folder."""
    from undostore.git.objects import BLOB, TREE, hash_object

    from .restore_support import craft_snapshot

    root = make_tree(tmp_path / "root", {"F": {"a.txt": "a1", "b.txt": "b", "S": {"k": "k"}}})
    time.sleep(PAUSE_S)   # every file recorded: none hashed again hides a wrong tree id
    with Workspace(root, store=tmp_path / "store", limits=RECORDING) as ws:
        ws.snapshot()
        k_tree = hash_object(TREE, b"100644 k\x00" + hash_object(BLOB, b"k"))
        b_entry = ("raw", b"0100644" if odd == "zero-padded-file-mode" else b"100644",
                   hash_object(BLOB, b"b"))
        s_entry = ("raw", b"040000" if odd == "zero-padded-folder-mode" else b"40000", k_tree)
        names = ["b.txt", "a.txt", "S"] if odd == "out-of-order" else ["S", "a.txt", "b.txt"]
        values = {"a.txt": b"a2", "b.txt": b_entry, "S": s_entry}
        craft_snapshot(ws.store, {"F": {"S": {"k": b"k"}}})   # k's blob and tree
        odd_id = craft_snapshot(ws.store, {"F": {n: values[n] for n in names}}, sort=False)
        ws.store.refresh()
        _restore_pausing(ws, odd_id)
        time.sleep(PAUSE_S)
        got = ws.snapshot().id
    assert (root / "F" / "a.txt").read_text() == "a2"
    assert got == _fresh_id(root, tmp_path) != odd_id
