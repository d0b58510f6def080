"""What a restore keeps of the files it rewrites and gives the files it re-creates: permission
bits (umask 000 / 022 / 077; 0600, 0640, 0664, 0700 folders; setuid, setgid, sticky), owners
(uid 65534 as seen by root), extended attributes and ACLs, and holes in sparse files."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from undostore import Workspace
from undostore.limits import DEFAULT_LIMITS
from undostore.restore.blobs import write_sparse
from undostore.restore.notices import Kind
from undostore.store.statcache import FINE_MARGIN_NS

from .hostile_support import IS_ROOT, NOBODY, give_away

posix = pytest.mark.skipif(sys.platform == "win32", reason="POSIX permission bits")
root_only = pytest.mark.skipif(not IS_ROOT or sys.platform == "win32",
                               reason="needs root (files owned by another user)")


def mode_of(path: Path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


@pytest.fixture
def umask():
    """Set the process umask for one test, restored afterwards."""
    old = os.umask(0o022)
    yield os.umask
    os.umask(old)


FILES = {"key": 0o600, "group": 0o640, "shared": 0o664, "tool": 0o755, "limited": 0o750,
         "suid": 0o4755, "sgid": 0o2755, "sticky": 0o1644}
FOLDERS = {"secrets": 0o700, "team": 0o750, "inherit": 0o2775, "drop": 0o1777}


def _expected_recreated(bits: int) -> int:
    return bits & ~0o6000   # setuid/setgid are never added


@posix
@pytest.mark.parametrize("mask", [0o000, 0o022, 0o077])
def test_recreated_files_and_folders_get_their_recorded_bits(tmp_path, umask, mask) -> None:
    root = tmp_path / "p"
    root.mkdir()
    umask(mask)
    for name, bits in FILES.items():
        (root / name).write_text(name)
        os.chmod(root / name, bits)
    for name, bits in FOLDERS.items():
        (root / name).mkdir()
        (root / name / "f").write_text("inside")
        os.chmod(root / name, bits)
    with Workspace(root, tmp_path / "store") as ws:
        target = ws.snapshot().id
        for name in FILES:
            os.unlink(root / name)
        for name in FOLDERS:
            os.chmod(root / name, 0o700)
            shutil.rmtree(root / name)
        ws.snapshot()
        umask(0o000)  # a different umask at restore time does not matter: the record does
        ws.restore(target)
        assert ws.diff(target) == []
    for name, bits in FILES.items():
        assert mode_of(root / name) == _expected_recreated(bits), name
    for name, bits in FOLDERS.items():
        assert mode_of(root / name) == bits, name
        assert (root / name / "f").read_text() == "inside"


@posix
@pytest.mark.parametrize("mask", [0o000, 0o022, 0o077])
def test_without_a_record_the_umask_default_and_never_more_open(tmp_path, umask, mask) -> None:
    root = tmp_path / "p"
    root.mkdir()
    (root / "dir").mkdir()
    (root / "dir" / "f").write_text("f")
    (root / "x").write_text("x")
    os.chmod(root / "x", 0o755)
    with Workspace(root, tmp_path / "store") as ws:
        target = ws.snapshot().id
        shutil.rmtree(root / "dir")
        os.unlink(root / "x")
        ws.snapshot()
        shutil.rmtree(tmp_path / "store" / "modes")  # a snapshot taken before records existed
        umask(mask)
        ws.restore(target)
    assert mode_of(root / "dir") == 0o777 & ~mask
    assert mode_of(root / "dir" / "f") == 0o666 & ~mask
    executable = 0o777 & ~mask
    assert mode_of(root / "x") == executable & ~0o111 | ((executable & 0o444) >> 2)


@posix
@pytest.mark.parametrize("bits", [0o600, 0o640, 0o664, 0o4644, 0o2664, 0o1644, 0o400])
def test_changed_content_keeps_the_bits_but_never_setuid(tmp_path, bits) -> None:
    root = tmp_path / "p"
    root.mkdir()
    (root / "f").write_text("version A\n")
    with Workspace(root, tmp_path / "store") as ws:
        target = ws.snapshot().id
        (root / "f").write_text("version B\n")
        os.chmod(root / "f", bits)
        ws.snapshot()
        result = ws.restore(target)
        assert (root / "f").read_text() == "version A\n"
        if bits & 0o6000:
            assert any(w.kind is Kind.SETID for w in result.warnings)
    assert mode_of(root / "f") == bits & ~0o6000


@posix
@pytest.mark.parametrize("foreign_group", [False, True])
def test_a_replacing_temp_file_starts_private_unless_owner_and_group_are_the_old_ones(
        tmp_path, monkeypatch, foreign_group) -> None:
    """A temp file replacing a file of this process's user and group is created with the old
    file's bits (no chmod after it); one replacing a file of another group starts 0600 and
    gets its bits only after its group (it never gives that group's access to this one)."""
    if foreign_group and not IS_ROOT:
        pytest.skip("needs root (a file of another group)")
    root = tmp_path / "p"
    root.mkdir()
    (root / "f").write_text("version A\n")
    os.chmod(root / "f", 0o640)
    with Workspace(root, tmp_path / "store") as ws:
        target = ws.snapshot().id
        (root / "f").write_text("version B\n")
        if foreign_group:
            os.chown(root / "f", -1, NOBODY)
        ws.snapshot()
        chmods: list[int] = []
        real_fchmod = os.fchmod

        def fchmod(fd: int, bits: int) -> None:
            chmods.append(stat.S_IMODE(os.fstat(fd).st_mode))   # the bits before the call
            real_fchmod(fd, bits)

        monkeypatch.setattr(os, "fchmod", fchmod)
        ws.restore(target)
        monkeypatch.undo()
    assert (root / "f").read_text() == "version A\n"
    assert mode_of(root / "f") == 0o640
    assert os.lstat(root / "f").st_gid == (NOBODY if foreign_group else os.getegid())
    assert chmods == ([0o600] if foreign_group else [])


@posix
@pytest.mark.parametrize(("now", "after"), [(0o4644, 0o755), (0o640, 0o750), (0o600, 0o700),
                                            (0o604, 0o705), (0o2755, 0o644), (0o711, 0o600)])
def test_exec_bit_follows_read_and_clears_setuid(tmp_path, now, after) -> None:
    """x only where r; setuid/setgid cleared whenever the exec bit changes (4644 -> 0755)."""
    root = tmp_path / "p"
    root.mkdir()
    (root / "f").write_text("#!/bin/sh\n")
    os.chmod(root / "f", 0o755 if after & 0o100 else 0o644)
    with Workspace(root, tmp_path / "store") as ws:
        target = ws.snapshot().id
        os.chmod(root / "f", now)
        ws.snapshot()
        ws.restore(target)
        assert ws.diff(target) == []
    assert mode_of(root / "f") == after


@posix
def test_undo_then_redo_gives_back_the_same_modes(tmp_path, umask) -> None:
    """A 0700 `secrets/` folder with a 0600 key written under umask 000 stays so."""
    root = tmp_path / "p"
    root.mkdir()
    umask(0o000)
    (root / "secrets").mkdir(mode=0o700)
    (root / "secrets" / "key").write_text("k")
    os.chmod(root / "secrets" / "key", 0o600)
    (root / "notes").write_text("v1")
    with Workspace(root, tmp_path / "store") as ws:
        ws.snapshot(session="s")
        shutil.rmtree(root / "secrets")
        (root / "notes").write_text("v2")
        ws.undo(session="s")
        assert mode_of(root / "secrets") == 0o700
        assert mode_of(root / "secrets" / "key") == 0o600
        ws.redo(session="s")
        assert not (root / "secrets").exists()
        ws.undo(session="s")
    assert mode_of(root / "secrets") == 0o700
    assert mode_of(root / "secrets" / "key") == 0o600
    assert mode_of(root / "notes") == 0o666


@root_only
def test_owner_is_kept_and_given_back_by_a_root_restore(tmp_path) -> None:
    root = tmp_path / "p"
    (root / "sub").mkdir(parents=True)
    (root / "mine").write_text("A")
    (root / "sub" / "theirs").write_text("A")
    (root / "gone").write_text("A")
    give_away(root / "sub")
    os.chown(root / "mine", NOBODY, NOBODY)
    os.chown(root / "gone", NOBODY, 0)
    with Workspace(root, tmp_path / "store") as ws:
        target = ws.snapshot().id
        (root / "mine").write_text("B")
        os.unlink(root / "gone")
        shutil.rmtree(root / "sub")
        ws.snapshot()
        ws.restore(target)
    for path, owner in (("mine", (NOBODY, NOBODY)), ("gone", (NOBODY, 0)),
                        ("sub", (NOBODY, NOBODY)), ("sub/theirs", (NOBODY, NOBODY))):
        st = os.lstat(root / path)
        assert (st.st_uid, st.st_gid) == owner, path


@root_only
def test_without_a_record_root_gives_new_files_to_the_folders_owner(tmp_path) -> None:
    root = tmp_path / "p"
    (root / "d").mkdir(parents=True)
    (root / "d" / "f").write_text("A")
    give_away(root)
    with Workspace(root, tmp_path / "store") as ws:
        target = ws.snapshot().id
        os.unlink(root / "d" / "f")
        ws.snapshot()
        shutil.rmtree(tmp_path / "store" / "modes")
        ws.restore(target)
    assert os.lstat(root / "d" / "f").st_uid == NOBODY


@posix
def test_xattrs_and_acls_are_kept_when_content_changes(tmp_path) -> None:
    root = tmp_path / "p"
    root.mkdir()
    f = root / "f"
    f.write_text("A")
    with Workspace(root, tmp_path / "store") as ws:
        target = ws.snapshot().id
        f.write_text("B")
        try:
            os.setxattr(f, "user.origin", b"kept")
        except OSError:
            pytest.skip("no user xattrs on this file system")
        acl = shutil.which("setfacl") and shutil.which("getfacl")
        if acl:
            subprocess.run(["setfacl", "-m", "u:1234:rw", str(f)], check=True)
        os.chmod(f, 0o640)  # the ACL mask follows the group bits
        ws.snapshot()
        result = ws.restore(target)
        assert f.read_text() == "A"
        assert not result.warnings
    assert os.getxattr(f, "user.origin") == b"kept"
    if acl:
        shown = subprocess.run(["getfacl", "-c", str(f)], capture_output=True, text=True,
                               check=True).stdout
        assert "user:1234:rw-" in shown
    assert mode_of(f) == 0o640


@posix
def test_a_two_gib_sparse_file_comes_back_sparse(tmp_path) -> None:
    root = tmp_path / "p"
    root.mkdir()
    big = root / "disk.img"
    size = 2 << 30
    with open(big, "wb") as out:
        out.write(b"head" * 1024)
        out.seek(size - 4096)
        out.write(b"tail" * 1024)
    used_before = os.stat(big).st_blocks * 512
    if used_before > 1 << 20:
        pytest.skip("this file system does not keep holes")
    with Workspace(root, tmp_path / "store") as ws:
        target = ws.snapshot().id
        os.unlink(big)
        ws.snapshot()
        ws.restore(target)
    st = os.stat(big)
    assert st.st_size == size
    assert st.st_blocks * 512 <= used_before + (64 << 10)
    with open(big, "rb") as f:
        assert f.read(4096) == b"head" * 1024
        f.seek(size // 2)
        assert f.read(4096) == bytes(4096)
        f.seek(size - 4096)
        assert f.read() == b"tail" * 1024


@posix
@settings(max_examples=60, deadline=None)
@given(st.lists(st.one_of(st.integers(0, 3 * 4096 + 7).map(bytes),
                          st.binary(min_size=1, max_size=5000)), max_size=8))
def test_sparse_writer_round_trips_and_leaves_aligned_zero_blocks_as_holes(pieces) -> None:
    """Any chunking of any content reads back the same; the file never uses more blocks than
    its non-zero 4 KiB blocks need."""
    import tempfile

    data = b"".join(pieces)
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "f")
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            assert write_sparse(fd, pieces) == len(data)
        finally:
            os.close(fd)
        with open(path, "rb") as f:
            assert f.read() == data
        blocks = {i // 4096 for i, byte in enumerate(data) if byte}
        assert os.stat(path).st_blocks * 512 <= max(len(blocks), 1) * 4096 + 4096 * 2


@posix
def test_record_follows_a_chmod_that_keeps_the_snapshot_id(tmp_path, umask) -> None:
    """0644 -> 0600 changes no tree id; the record of that id follows the latest capture, for
    files (a chmod misses the stat cache) and folders (looked at on every snapshot)."""
    umask(0o022)
    root = tmp_path / "p"
    (root / "d").mkdir(parents=True)
    (root / "d" / "key").write_text("k")
    with Workspace(root, tmp_path / "store") as ws:
        first = ws.snapshot().id
        os.chmod(root / "d" / "key", 0o600)
        os.chmod(root / "d", 0o700)
        assert ws.snapshot().id == first
        assert ws.snapshot().id == first   # nothing hashed: the record is reused
        shutil.rmtree(root / "d")
        ws.snapshot()
        ws.restore(first)
    assert mode_of(root / "d") == 0o700
    assert mode_of(root / "d" / "key") == 0o600


KILLED_CHILD = """
import dataclasses, sys, time
from undostore import Workspace
from undostore.restore.restore import restore
def stall(what, path):
    if what == "before replace":
        open(sys.argv[3], "w").close()
        time.sleep(600)
ws = Workspace(sys.argv[1])
restore(dataclasses.replace(ws._worktree(), checkpoint=stall), sys.argv[2])
"""


@posix
def test_exec_bit_change_of_a_hard_link_killed_before_its_rename_is_finished(tmp_path) -> None:
    """The new inode of a hard-linked file is a temp file until renamed: a kill there leaves
    the restore pending, the next command removes the temp and finishes."""
    import time

    root = tmp_path / "p"
    (root / "d").mkdir(parents=True)
    (root / "d" / "a").write_text("#!/bin/sh\n")
    (root / "d" / "a").chmod(0o755)
    ws = Workspace(root)
    target = ws.snapshot().id
    (root / "d" / "a").chmod(0o644)
    os.link(root / "d" / "a", tmp_path / "other")
    ws.snapshot()
    ws.close()
    marker = tmp_path / "stalled"
    child = subprocess.Popen([sys.executable, "-c", KILLED_CHILD, str(root), target, str(marker)])
    try:
        deadline = time.monotonic() + 60
        while not marker.exists():
            assert child.poll() is None and time.monotonic() < deadline
            time.sleep(0.01)
    finally:
        child.kill()
        child.wait()
    assert any(name.startswith(".undostore-tmp") for name in os.listdir(root / "d"))
    with Workspace(root) as ws:
        assert ws.snapshot().id == target
    assert sorted(os.listdir(root / "d")) == ["a"]
    assert mode_of(root / "d" / "a") == 0o755 and mode_of(tmp_path / "other") == 0o644


@posix
def test_record_of_a_snapshot_taken_right_after_a_restore_keeps_the_bits(tmp_path, umask) -> None:
    """After a restore the stat cache holds no tree of the last snapshot, so the next record is
    built from the cache's fingerprints: a 0600 file that was not touched stays 0600."""
    umask(0o022)
    root = tmp_path / "p"
    root.mkdir()
    (root / "key").write_text("k")
    os.chmod(root / "key", 0o600)
    (root / "notes").write_text("v1")
    with Workspace(root, tmp_path / "store") as ws:
        first = ws.snapshot().id
        (root / "notes").write_text("v2")
        ws.snapshot()
        ws.restore(first)
        (root / "notes").write_text("v3")
        third = ws.snapshot().id
        os.unlink(root / "key")
        ws.snapshot()
        ws.restore(third)
    assert mode_of(root / "key") == 0o600


@posix
def test_gc_removes_the_mode_records_of_snapshots_nothing_keeps(tmp_path, umask) -> None:
    """A dropped session's records go with its trees; the newest point's record stays, and a
    restore of it still gives back its bits."""
    umask(0o022)
    root = tmp_path / "p"
    root.mkdir()
    key = root / "key"
    ids = []
    with Workspace(root, tmp_path / "store") as ws:
        for version in ("v1", "v2", "v3"):
            key.write_text(version)
            os.chmod(key, 0o600)
            ids.append(ws.snapshot(session="old").id)
        kept = ws.snapshot(session="new", label="kept").id
        records = tmp_path / "store" / "modes"
        assert set(ids) <= set(os.listdir(records))
        ws.drop("old")
        ws.gc(grace_seconds=0)
        left = set(os.listdir(records))
        assert kept in left
        assert left.isdisjoint(set(ids) - {kept})
        key.unlink()
        ws.restore(kept)
    assert mode_of(key) == 0o600


PAUSE_S = 3 * FINE_MARGIN_NS / 1e9   # past it, the stat cache trusts a file written before


def _files_of_nobody(root: Path, theirs: list[str], mine: list[str]) -> None:
    """`theirs` and `mine` written, `theirs` given to nobody, none racy once this returns."""
    for name in [*theirs, *mine]:
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text("A")
    for name in theirs:
        os.chown(root / name, NOBODY, NOBODY)
    time.sleep(PAUSE_S)


def _restore_pausing(ws: Workspace, snapshot_id: str) -> None:
    """Restore, pausing before each rename: what it wrote is not racy when it records it, so
    the next snapshot trusts its record instead of reading the disk."""
    ws.checkpoint = lambda what, path: time.sleep(PAUSE_S) if what == "replace" else None
    try:
        ws.restore(snapshot_id)
    finally:
        ws.checkpoint = None


def _deleted_and_restored_to_nobody(ws: Workspace, root: Path, theirs: list[str],
                                    snapshot_id: str) -> None:
    for name in theirs:
        os.unlink(root / name)
    ws.snapshot()
    ws.restore(snapshot_id)
    for name in theirs:
        st = os.lstat(root / name)
        assert (st.st_uid, st.st_gid) == (NOBODY, NOBODY), name


@root_only
@pytest.mark.parametrize("records_writes", [False, True], ids=["hashed", "recorded"])
def test_owners_survive_the_snapshot_taken_after_a_restore(tmp_path, records_writes) -> None:
    """A restore that records its writes in the stat cache (more than `restore_hash_at_most`
    paths) leaves no tree id for the next snapshot's mode record to start from; the owners of
    the files it left alone, replaced, re-created or re-created with their folder must still be
    those on disk."""
    limits = DEFAULT_LIMITS._replace(restore_hash_at_most=0) if records_writes else DEFAULT_LIMITS
    root = tmp_path / "p"
    theirs = ["sub/theirs", "sub/replaced", "sub/recreated", "gone/f"]
    _files_of_nobody(root, theirs, ["sub/notes"])
    with Workspace(root, tmp_path / "store", limits=limits) as ws:
        first = ws.snapshot().id
        (root / "sub" / "replaced").write_text("B")   # keeps uid 65534: written in place
        os.unlink(root / "sub" / "recreated")
        shutil.rmtree(root / "gone")
        ws.snapshot()
        _restore_pausing(ws, first)
        (root / "sub" / "notes").write_text("C")
        third = ws.snapshot()
        if records_writes:
            assert third.hashed == 1   # notes: the restore's record of the rest is trusted
        _deleted_and_restored_to_nobody(ws, root, theirs, third.id)


@root_only
@pytest.mark.parametrize("same_tree", [False, True], ids=["new-tree", "earlier-tree"])
@pytest.mark.parametrize("change", ["chmod", "chown"])
def test_a_snapshot_that_cannot_record_modes_leaves_its_record_in_the_cache(
        tmp_path, umask, change, same_tree) -> None:
    """After a recording restore, the user chmods or chowns a file and the next snapshot
    cannot save its mode record (its folder is a file here): the cache then carries that
    snapshot's record, not the restore's (stale for the changed file) nor the saved one of an
    earlier snapshot with the same tree id, so the snapshot after it keeps the bits and owners
    of the files it does not read again."""
    umask(0o022)
    root = tmp_path / "p"
    _files_of_nobody(root, ["sub/key", "sub/recreated"], ["sub/notes"])
    records = tmp_path / "store" / "modes"
    limits = DEFAULT_LIMITS._replace(restore_hash_at_most=0)
    with Workspace(root, tmp_path / "store", limits=limits) as ws:
        first = ws.snapshot().id
        os.unlink(root / "sub" / "recreated")
        ws.snapshot()
        _restore_pausing(ws, first)
        if change == "chmod":
            os.chmod(root / "sub" / "key", 0o600)
            want = (0o600, NOBODY, NOBODY)
        else:
            os.chown(root / "sub" / "key", 0, 0)
            want = (0o644, 0, 0)
        if not same_tree:
            (root / "sub" / "notes").write_text("B")
        time.sleep(PAUSE_S)   # the failed snapshot's entries are trusted by the next one
        records.rename(tmp_path / "modes.away")
        records.write_text("")
        unrecorded = ws.snapshot()
        assert (unrecorded.id == first) == same_tree
        assert [why for _, why in unrecorded.warnings
                if why.startswith("could not record permission bits")]
        records.unlink()
        (tmp_path / "modes.away").rename(records)
        (root / "sub" / "notes").write_text("C")
        kept = ws.snapshot()
        assert kept.hashed == 1
        _deleted_and_restored_to_nobody(ws, root, ["sub/recreated"], kept.id)
        os.unlink(root / "sub" / "key")
        ws.snapshot()
        ws.restore(kept.id)
    st = os.lstat(root / "sub" / "key")
    assert (stat.S_IMODE(st.st_mode), st.st_uid, st.st_gid) == want
