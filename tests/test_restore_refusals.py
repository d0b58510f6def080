"""What a restore refuses, and that a refusal changes nothing: incomplete snapshots, unsafe paths,
files in the way, and files changed after the safety snapshot."""

from __future__ import annotations

import os

import pytest

from undostore import (
    ConflictError,
    IncompleteSnapshotError,
    PendingRecoveryError,
    UnknownSnapshotError,
    UnsafePathError,
    Workspace,
)
from undostore.errors import RefusedError
from undostore.git.objects import BLOB, hash_object
from undostore.git.packwriter import PackWriter
from undostore.restore.diskstate import is_case_insensitive
from undostore.restore.restorelog import journal_path

from .conftest import IS_WINDOWS, Cli, Link
from .restore_support import craft_snapshot, disk_state, temp_files


def _assert_nothing_changed(root, ws: Workspace, before) -> None:
    assert disk_state(root) == before
    assert not os.path.exists(journal_path(ws.store))
    assert temp_files(root) == []


def _refused(tree_factory, start: dict, crafted: dict, error: type[Exception],
             match: str | None = None) -> Exception:
    """A root holding `start`, snapshotted, then a restore of a snapshot crafted from `crafted`
    (restore_support.craft_snapshot): it raises `error` and changes nothing. The error."""
    root = tree_factory(start)
    with Workspace(root) as ws:
        ws.snapshot()
        snap = craft_snapshot(ws.store, crafted)
        before = disk_state(root)
        with pytest.raises(error, match=match) as info:
            ws.restore(snap)
        _assert_nothing_changed(root, ws, before)
    return info.value


# --- incomplete snapshots ------------------------------------------------------------------------


def test_tree_that_outlived_a_blob_is_refused_before_any_change(tree_factory):
    error = _refused(tree_factory, {"a": "1", "b": "2"},
                     {"a": b"changed", "gone": ("missing", b"lost content")},
                     IncompleteSnapshotError)
    assert error.exit_code == 3
    assert error.path == "gone"
    assert error.missing == [hash_object(BLOB, b"lost content").hex()]


def test_missing_subtree_is_refused(tree_factory):
    lost_tree = hash_object(2, b"")[:-1] + b"\x01"   # names a tree the store never had
    _refused(tree_factory, {"a": "1"}, {"a": b"1", "sub": ("raw", b"40000", lost_tree)},
             IncompleteSnapshotError)


def test_corrupt_pack_byte_is_refused_before_any_change(tree_factory):
    root = tree_factory({"a": "1"})
    ws = Workspace(root)
    ws.snapshot()
    big = os.urandom(1 << 16)
    (root / "big").write_bytes(big)
    packs_before = set(os.listdir(ws.store.pack_dir))
    snap = ws.snapshot().id
    (pack,) = [n for n in set(os.listdir(ws.store.pack_dir)) - packs_before
               if n.endswith(".pack")]
    (root / "big").unlink()
    path = os.path.join(ws.store.pack_dir, pack)
    with open(path, "r+b") as f:   # the blob fills most of this pack: damage its middle
        f.seek(os.path.getsize(path) // 2)
        byte = f.read(1)
        f.seek(-1, os.SEEK_CUR)
        f.write(bytes([byte[0] ^ 0xFF]))
    before = disk_state(root)
    with pytest.raises(IncompleteSnapshotError) as info:
        ws.restore(snap)
    assert info.value.corrupt == [hash_object(BLOB, big).hex()]
    _assert_nothing_changed(root, ws, before)


def test_unknown_id_and_blob_id_are_usage_errors(tree_factory):
    root = tree_factory({"a": "1"})
    ws = Workspace(root)
    ws.snapshot()
    with pytest.raises(UnknownSnapshotError) as info:
        ws.restore("deadbeef")
    assert info.value.exit_code == 2
    with pytest.raises(UnknownSnapshotError):
        ws.restore(hash_object(BLOB, b"1").hex())


# --- unsafe paths -----------------------------------------------------------------------------

BAD_NAMES = {
    "dotdot": b"..",
    "dot": b".",
    "empty": b"",
    "slash inside a name": b"a/../../escape",
    ".git": b".git",
    ".GIT": b".GIT",
    ".git with a trailing dot": b".git.",
    ".git with a trailing space": b".git ",
    "NTFS short name": b"GIT~1",
    "NTFS stream": b".git::$INDEX_ALLOCATION",
    "HFS ignorable": ".g\u200cit".encode(),
}


@pytest.mark.parametrize("name", list(BAD_NAMES.values()), ids=list(BAD_NAMES))
def test_unsafe_name_is_refused_before_any_change(tree_factory, name):
    error = _refused(tree_factory, {"a": "1"},
                     {"a": b"changed", "sub": {name: {"hooks": {"x": b"boom"}}}}, UnsafePathError)
    assert error.exit_code == 3
    assert error.path == "sub/" + os.fsdecode(name)


WINDOWS_NAMES = [b"a:b", b"CON", b"nul.txt", b"com1.tar.gz", b"LPT9", b"trail.", b"trail ",
                 b"a<b", b"q?", b"ctl\x01"]


@pytest.mark.skipif(not IS_WINDOWS, reason="Windows-only names (see test_restore_plan)")
@pytest.mark.parametrize("name", WINDOWS_NAMES)
def test_name_windows_cannot_hold_is_refused_on_windows(tree_factory, name):
    _refused(tree_factory, {"a": "1"}, {"a": b"changed", name: b"x"}, UnsafePathError)


def test_duplicate_name_in_one_tree_is_refused(tree_factory):
    _refused(tree_factory, {"a": "1"}, {b"dup": b"one", "dup": b"two"}, UnsafePathError,
             match="twice")


def test_submodule_entry_is_refused(tree_factory):
    _refused(tree_factory, {"a": "1"}, {"a": b"2", "mod": ("raw", b"160000", b"\x11" * 20)},
             UnsafePathError, match="submodule")


def test_path_into_the_store_under_root_is_refused(tree_factory):
    root = tree_factory({"a": "1"})
    ws = Workspace(root, store=root / "st")
    ws.snapshot()
    snap = craft_snapshot(ws.store, {"a": b"1", "st": {"objects": {"x": b"overwrite"}}})
    before = disk_state(root, skip=(".git", "st"))
    with pytest.raises(UnsafePathError, match="store"):
        ws.restore(snap)
    assert disk_state(root, skip=(".git", "st")) == before


def test_names_differing_only_in_case(tree_factory):
    root = tree_factory({"x": "1"})
    ws = Workspace(root)
    ws.snapshot()
    snap = craft_snapshot(ws.store, {"x": b"1", "a": b"lower", "A": b"upper"})
    if is_case_insensitive(str(root)):
        before = disk_state(root)
        with pytest.raises(UnsafePathError, match="only in case"):
            ws.restore(snap)
        _assert_nothing_changed(root, ws, before)
    else:
        ws.restore(snap)
        assert (root / "a").read_bytes() == b"lower" and (root / "A").read_bytes() == b"upper"


@pytest.mark.skipif(IS_WINDOWS, reason="needs symlinks")
def test_never_writes_through_an_ignored_symlinked_folder(tree_factory, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    error = _refused(tree_factory,
                     {".gitignore": "build\n", "a": "1", "build": Link(str(outside))},
                     {".gitignore": b"build\n", "a": b"2",
                      "build": {"x": b"written outside the root"}}, UnsafePathError)
    assert error.path == "build"
    assert os.listdir(outside) == []


# --- things in the way ---------------------------------------------------------------------------


def test_ignored_file_where_the_target_has_a_file_is_not_overwritten(tree_factory):
    error = _refused(tree_factory, {".gitignore": "*.log\n", "a": "1", "x.log": "precious"},
                     {".gitignore": b"", "a": b"1", "x.log": b"other"}, ConflictError)
    assert error.path == "x.log"


def test_folder_holding_ignored_files_cannot_become_a_file(tree_factory):
    error = _refused(tree_factory,
                     {".gitignore": "*.log\n", "d": {"a": "1", "keep.log": "ignored"}},
                     {".gitignore": b"*.log\n", "d": b"a file now"}, ConflictError)
    assert error.path == "d"


# --- conflicts ---------------------------------------------------------------------------------


def test_file_changed_after_the_safety_snapshot_is_not_overwritten(tree_factory):
    root = tree_factory({"a": "a0", "b": "b0", "c": "c0"})
    ws = Workspace(root)
    snap = ws.snapshot().id
    for name in "abc":
        (root / name).write_text(name + "1")

    def someone_edits_b(plan):
        (root / "b").write_text("b2, the user's newest work")
        return True

    with pytest.raises(ConflictError) as info:
        ws.restore(snap, confirm=someone_edits_b)
    assert info.value.exit_code == 3
    assert info.value.path == "b"
    assert (root / "b").read_text() == "b2, the user's newest work"
    assert os.path.exists(journal_path(ws.store))
    # Every later command refuses until the restore is finished or rolled back, also through
    # the workspace object that ran the restore.
    with pytest.raises(PendingRecoveryError, match="--abort"):
        ws.snapshot()
    with pytest.raises(PendingRecoveryError, match="--abort"):
        Workspace(root).snapshot()
    result = Workspace(root).abort_restore()
    assert result is not None and result.operation == "abort"
    assert [w.path for w in result.warnings] == ["b"]
    assert {n: (root / n).read_text() for n in "abc"} == {
        "a": "a1", "b": "b2, the user's newest work", "c": "c1"}
    assert not os.path.exists(journal_path(ws.store))
    assert temp_files(root) == []
    Workspace(root).snapshot()


def test_file_created_after_the_safety_snapshot_is_not_overwritten(tree_factory):
    root = tree_factory({"a": "1", "new": "from the snapshot"})
    ws = Workspace(root)
    snap = ws.snapshot().id
    (root / "new").unlink()

    def someone_creates_new(plan):
        (root / "new").write_text("the user's file")
        return True

    with pytest.raises(ConflictError):
        ws.restore(snap, confirm=someone_creates_new)
    assert (root / "new").read_text() == "the user's file"
    Workspace(root).abort_restore()
    assert (root / "new").read_text() == "the user's file"


def test_expected_snapshot_mismatch_is_a_conflict_before_any_write(tree_factory):
    root = tree_factory({"a": "1", "b": "2"})
    ws = Workspace(root)
    old = ws.snapshot().id
    (root / "a").write_text("agent")
    expected = ws.snapshot().id
    (root / "a").write_text("the user, after the agent")
    (root / "b").write_text("b too")
    before = disk_state(root)
    with pytest.raises(ConflictError) as info:
        ws.restore(old, expected=expected)
    assert info.value.path == "a"
    _assert_nothing_changed(root, ws, before)
    (root / "a").write_text("agent")
    (root / "b").write_text("2")
    ws.restore(old, expected=expected)
    assert (root / "a").read_text() == "1"


def test_damaged_journal_blocks_until_set_aside(tree_factory):
    root = tree_factory({"a": "1"})
    ws = Workspace(root)
    ws.snapshot()
    with open(journal_path(ws.store), "wb") as f:
        f.write(b"not a journal")
    with pytest.raises(PendingRecoveryError, match="--abort"):
        Workspace(root).snapshot()
    result = Workspace(root).abort_restore()
    assert result is not None and result.warnings
    assert not os.path.exists(journal_path(ws.store))
    assert os.listdir(ws.store.restore_dir) == []   # nothing left that looks pending
    Workspace(root).snapshot()


@pytest.mark.skipif(IS_WINDOWS or os.geteuid() == 0,
                    reason="needs a folder its owner cannot write (root writes anyway)")
def test_read_only_folder_refuses_before_the_first_change(tree_factory):
    """The preflight: a folder the restore must write in is read-only: exit 3 naming it,
    nothing changed, nothing pending (tests/test_restore_hostile.py does this as uid 65534)."""
    root = tree_factory({"a": "1", "locked": {"f": "x"}})
    ws = Workspace(root)
    snap = ws.snapshot().id
    (root / "a").write_text("2")
    (root / "locked" / "new").write_text("added after the snapshot")
    os.chmod(root / "locked", 0o555)
    try:
        with pytest.raises(RefusedError) as info:
            ws.restore(snap)
        assert info.value.path == "locked" and info.value.exit_code == 3
        assert not os.path.exists(journal_path(ws.store))
        assert (root / "a").read_text() == "2"
    finally:
        os.chmod(root / "locked", 0o755)


@pytest.mark.skipif(IS_WINDOWS or os.geteuid() == 0,
                    reason="needs a folder its owner cannot write (root writes anyway)")
def test_write_error_half_way_leaves_a_state_the_next_command_finishes(tree_factory):
    """A folder made read-only after the preflight (at the journal step, through the restore's
    checkpoint callable) stops the restore half-way; the next command finishes it."""
    import dataclasses

    from undostore.restore.restore import restore

    root = tree_factory({"a": "1", "locked": {"f": "x"}})
    ws = Workspace(root)
    snap = ws.snapshot().id
    (root / "a").write_text("2")
    (root / "locked" / "new").write_text("added after the snapshot")

    def lock(what: str, path: str) -> None:
        if what == "journal":
            os.chmod(root / "locked", 0o555)         # deleting locked/new will fail

    try:
        with pytest.raises(PendingRecoveryError) as info:
            restore(dataclasses.replace(ws._worktree(), checkpoint=lock), snap)
        assert info.value.path == "locked/new"
        assert os.path.exists(journal_path(ws.store))
    finally:
        os.chmod(root / "locked", 0o755)
    assert Workspace(root).snapshot().id == snap   # the next command finished it
    assert (root / "a").read_text() == "1"


def test_journal_write_killed_before_its_rename_leaves_nothing_pending(tree_factory):
    root = tree_factory({"a": "1"})
    ws = Workspace(root)
    ws.snapshot()
    stray = os.path.join(ws.store.restore_dir, ".undostore-tmp-123-456-journal")
    with open(stray, "wb") as f:
        f.write(b"half a journal")
    Workspace(root).snapshot()          # looks, finds no journal, clears the stray temp
    assert os.listdir(ws.store.restore_dir) == []


def _restore_with_file_size_limit(root, target: str, limit: int):
    """`undostore restore TARGET --yes` in a real process whose files cannot grow past `limit`
    bytes: a write past it fails with EFBIG, as one on a full disk fails with ENOSPC."""
    import resource
    import signal

    def limited() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)   # an error, not a killed process
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    return Cli().run("restore", target, "--yes", root=root, preexec_fn=limited, timeout=120)


@pytest.mark.skipif(IS_WINDOWS, reason="a file-size limit (RLIMIT_FSIZE) is POSIX")
@pytest.mark.parametrize("where", ["modified file", "new folder"])
def test_a_write_refused_before_any_file_changed_fails_with_nothing_pending(tree_factory, where):
    """The disk refuses a write while temp files are written or a new folder is staged, before
    any file of the plan changed: exit 1 (not 'stopped half-way'), every file as it was, no
    temp file left, nothing pending; the same restore works once the cause is gone."""
    big = os.urandom(3 << 20)
    root = tree_factory({"a.txt": "one\n", "d": {"big.bin": "x"}})
    if where == "modified file":
        (root / "d" / "big.bin").write_bytes(big)
    else:
        (root / "new" / "deep").mkdir(parents=True)
        (root / "new" / "deep" / "big.bin").write_bytes(big)
    ws = Workspace(root)
    snap = ws.snapshot().id
    ws.close()
    (root / "a.txt").write_text("two\n")
    (root / "d" / "big.bin").write_text("x")
    if where == "new folder":
        for gone in ("new/deep/big.bin", "new/deep", "new"):
            (root / gone).unlink() if gone.endswith(".bin") else (root / gone).rmdir()
    before = disk_state(root)
    done = _restore_with_file_size_limit(root, snap, 1 << 20)
    assert done.returncode == 1, done.stderr
    assert "nothing was changed" in done.stderr and "big.bin" in done.stderr
    assert "half-way" not in done.stderr
    ws = Workspace(root)
    _assert_nothing_changed(root, ws, before)
    assert ws.restore(snap).target == snap                 # no limit now: it works
    assert (root / "a.txt").read_text() == "one\n"
    assert (root / ("d" if where == "modified file" else "new/deep") / "big.bin"
            ).read_bytes() == big


def test_an_intact_record_that_hashes_to_another_id_is_caught_at_its_write_and_taken_back(
        tree_factory):
    """The check before the first change reads records, not blobs (their CRC-32): a blob a
    pack holds under a wrong id (only a pack written wrong has one) passes it and fails as it
    is written, before its temp file is put in place. The restore is then taken back: every
    file as it was, no journal, no temp file, and the error names the blob."""
    root = tree_factory({"a": "1", "b": "2", "sub": {"c": "3"}})
    with Workspace(root) as ws:
        ws.snapshot()
        lie = hash_object(BLOB, b"what the id says")
        writer = PackWriter(ws.store.pack_dir)
        writer.add(BLOB, lie, b"what the pack holds")
        writer.commit()
        ws.store.refresh()
        # Sorted, deletes first: "a" is removed and "b" rewritten before "z" meets the lie.
        snap = craft_snapshot(ws.store, {"b": b"two", "sub": {"c": b"3"},
                                         "z": ("raw", b"100644", lie)})
        before = disk_state(root)
        with pytest.raises(IncompleteSnapshotError, match="put back") as info:
            ws.restore(snap)
        assert info.value.corrupt == [lie.hex()]
        _assert_nothing_changed(root, ws, before)
        assert ws.snapshot().id != snap
