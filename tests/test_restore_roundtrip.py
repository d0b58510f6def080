"""A restore makes the files equal to the snapshot, byte for byte, and touches nothing else."""

from __future__ import annotations

import os
import shutil
import stat
import tempfile
import time
import tracemalloc
import zlib

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from undostore import ConfirmationNeeded, ConflictError, Workspace
from undostore.restore.restorelog import journal_path
from undostore.snapshot.snapshot import EMPTY_TREE

from .conftest import IS_WINDOWS, Exe, Link, make_tree
from .restore_support import craft_snapshot, disk_state, mtimes, temp_files

posix_only = pytest.mark.skipif(IS_WINDOWS, reason="symlinks / exec bit / chmod are POSIX here")


def _age(root, seconds: float = 100.0) -> None:
    """Give every file an old mtime, so a rewrite would show."""
    old = time.time() - seconds
    for folder, _, files in os.walk(root):
        for name in files:
            path = os.path.join(folder, name)
            if not os.path.islink(path):
                os.utime(path, (old, old))


def test_restore_undoes_edit_add_delete_and_reports_each(tree_factory):
    root = tree_factory({"a.txt": "one\n", "keep.txt": "same\n", "d": {"b.txt": "bee\n"}})
    ws = Workspace(root)
    snap = ws.snapshot().id
    before = disk_state(root)
    (root / "a.txt").write_text("edited\n")
    (root / "new.txt").write_text("added\n")
    (root / "d" / "b.txt").unlink()
    result = ws.restore(snap)
    assert disk_state(root) == before
    assert (result.created, result.modified, result.deleted) == (["d/b.txt"], ["a.txt"],
                                                                 ["new.txt"])
    assert result.target == snap
    assert ws.snapshot().id == snap
    assert not os.path.exists(journal_path(ws.store))


def test_safety_snapshot_takes_the_restore_back(tree_factory):
    root = tree_factory({"a": "1", "sub": {"b": "2"}})
    ws = Workspace(root)
    old = ws.snapshot().id
    (root / "a").write_text("changed")
    (root / "c").write_text("new")
    now = disk_state(root)
    result = ws.restore(old)
    assert ws.restore(result.safety).target == result.safety
    assert disk_state(root) == now


def test_unchanged_files_keep_their_mtime(tree_factory):
    root = tree_factory({"a": "1", "b": "2", "d": {"c": "3", "e": "4"}})
    ws = Workspace(root)
    snap = ws.snapshot().id
    (root / "a").write_text("changed")
    (root / "d" / "e").unlink()
    _age(root)
    before = mtimes(root)
    ws.restore(snap)
    after = mtimes(root)
    assert after["b"] == before["b"]
    assert after[os.path.join("d", "c")] == before[os.path.join("d", "c")]
    assert after["a"] != before["a"]


def _fresh_id(root, tmp_path) -> str:
    """The snapshot id from a brand-new store: no stat cache, so nothing remembered can lie."""
    store = tmp_path / f"fresh-{time.monotonic_ns()}"
    with Workspace(root, store=store) as ws:
        return ws.snapshot().id


def test_snapshots_after_a_restore_stay_true(tree_factory, tmp_path):
    """The stat cache a restore leaves behind must not make later snapshots lie."""
    root = tree_factory({"a": "1", "d": {"b": "2", "e": {"c": "3"}}, "x": "x"})
    ws = Workspace(root)
    snap = ws.snapshot().id
    (root / "a").write_text("changed")
    shutil.rmtree(root / "d")
    ws.restore(snap)
    for name in os.listdir(root):   # everything goes, right after the restore
        full = root / name
        shutil.rmtree(full) if full.is_dir() else full.unlink()
    assert ws.snapshot().id == EMPTY_TREE.hex() == _fresh_id(root, tmp_path)
    result = ws.restore(snap)
    assert len(result.created) == 4
    (root / "d" / "e" / "c").write_text("edited after the restore")
    assert ws.snapshot().id == _fresh_id(root, tmp_path)


def test_restore_of_the_current_state_changes_nothing(tree_factory):
    root = tree_factory({"a": "1", "d": {"b": "2"}})
    ws = Workspace(root)
    snap = ws.snapshot().id
    _age(root)
    before = mtimes(root)
    result = ws.restore(snap, confirm=lambda plan: pytest.fail("nothing to confirm"))
    assert not result.changed
    assert mtimes(root) == before


def test_dry_run_reports_the_plan_and_changes_nothing(tree_factory):
    root = tree_factory({"a": "1", "d": {"b": "2"}})
    ws = Workspace(root)
    snap = ws.snapshot().id
    (root / "a").write_text("x")
    (root / "d" / "b").unlink()
    (root / "z").write_text("z")
    _age(root)
    before, times = disk_state(root), mtimes(root)
    result = ws.restore(snap, dry_run=True)
    assert result.dry_run
    assert (result.created, result.modified, result.deleted) == (["d/b"], ["a"], ["z"])
    assert disk_state(root) == before
    assert mtimes(root) == times
    assert not os.path.exists(journal_path(ws.store))


def test_declined_confirmation_raises_and_changes_nothing(tree_factory):
    root = tree_factory({"a": "1"})
    ws = Workspace(root)
    snap = ws.snapshot().id
    (root / "a").write_text("2")
    seen = []
    with pytest.raises(ConfirmationNeeded) as info:
        ws.restore(snap, confirm=lambda plan: seen.append(plan.summary()) or False)
    assert info.value.exit_code == 2
    assert (root / "a").read_text() == "2"
    assert "1 to modify" in seen[0]


def test_file_becomes_folder_and_folder_becomes_file(tree_factory):
    root = tree_factory({"x": "file x", "y": {"inner": "in y", "deep": {"z": "z"}}})
    ws = Workspace(root)
    snap = ws.snapshot().id
    before = disk_state(root)
    (root / "x").unlink()
    (root / "x").mkdir()
    (root / "x" / "now").write_text("x is a folder")
    shutil.rmtree(root / "y")
    (root / "y").write_text("y is a file")
    ws.restore(snap)
    assert disk_state(root) == before
    back = ws.restore(ws.snapshot().id)  # a no-op
    assert not back.changed


def test_emptied_folders_are_removed(tree_factory):
    root = tree_factory({"a": "1"})
    ws = Workspace(root)
    snap = ws.snapshot().id
    (root / "n" / "m" / "o").mkdir(parents=True)
    (root / "n" / "m" / "o" / "f").write_text("new")
    (root / "n" / "g").write_text("new")
    result = ws.restore(snap)
    assert not (root / "n").exists()
    assert set(result.removed_dirs) == {"n", "n/m", "n/m/o"}


def test_ignored_files_are_never_touched_and_keep_their_folder(tree_factory):
    root = tree_factory({".gitignore": "*.log\nbuild/\n", "a": "1"})
    ws = Workspace(root)
    snap = ws.snapshot().id
    (root / "pkg").mkdir()
    (root / "pkg" / "mod.py").write_text("new module")
    (root / "pkg" / "debug.log").write_text("ignored, inside a folder the restore empties")
    (root / "build").mkdir()
    (root / "build" / "out.o").write_text("ignored folder")
    (root / "top.log").write_text("ignored")
    result = ws.restore(snap)
    assert not (root / "pkg" / "mod.py").exists()
    assert (root / "pkg" / "debug.log").read_text().startswith("ignored")
    assert (root / "build" / "out.o").read_text() == "ignored folder"
    assert (root / "top.log").read_text() == "ignored"
    assert [w.path for w in result.warnings] == ["pkg"]
    assert ws.snapshot().id == snap


def test_read_only_file_is_replaced(tree_factory):
    root = tree_factory({"ro.txt": "old"})
    ws = Workspace(root)
    snap = ws.snapshot().id
    (root / "ro.txt").write_text("newer")
    os.chmod(root / "ro.txt", stat.S_IREAD)
    try:
        ws.restore(snap)
        assert (root / "ro.txt").read_text() == "old"
    finally:
        os.chmod(root / "ro.txt", stat.S_IREAD | stat.S_IWRITE)
    assert ws.snapshot().id == snap


def test_read_only_file_is_deleted(tree_factory):
    root = tree_factory({"a": "1"})
    ws = Workspace(root)
    snap = ws.snapshot().id
    (root / "ro").write_text("read-only, added later")
    os.chmod(root / "ro", stat.S_IREAD)
    ws.restore(snap)
    assert not (root / "ro").exists()


@posix_only
def test_exec_bit_and_symlinks_are_restored(tree_factory):
    root = tree_factory({"run.sh": Exe("#!/bin/sh\n"), "plain": "p", "link": Link("plain"),
                         "dir": {"f": "f"}, "dirlink": Link("dir")})
    ws = Workspace(root)
    snap = ws.snapshot().id
    before = disk_state(root)
    os.chmod(root / "run.sh", 0o644)
    os.chmod(root / "plain", 0o755)
    (root / "link").unlink()
    os.symlink("elsewhere", root / "link")
    (root / "dirlink").unlink()
    (root / "dirlink").write_text("now a file")
    result = ws.restore(snap)
    assert disk_state(root) == before
    assert sorted(result.modified) == ["dirlink", "link", "plain", "run.sh"]
    assert ws.snapshot().id == snap


def test_symlink_in_snapshot_is_written_or_reported(tree_factory):
    """A host that cannot create symlinks gets the link target as a file, and a warning. On
    Windows that file stays a link in the next snapshots, as with git's core.symlinks=false,
    whether it is hashed (just written, or touched since) or trusted from the stat cache (a
    file system that refuses links elsewhere: tests/test_restore_nosymlinks.py)."""
    root = tree_factory({"a": "1"})
    ws = Workspace(root)
    snap = craft_snapshot(ws.store, {"a": b"1", "ln": (0o120000, b"a")})
    result = ws.restore(snap)
    if os.path.islink(root / "ln"):
        assert os.readlink(root / "ln") == "a"
        assert result.warnings == []
        assert ws.snapshot().id == snap
    else:
        assert (root / "ln").read_bytes() == b"a"
        assert [w.path for w in result.warnings] == ["ln"]
        if IS_WINDOWS:
            assert ws.snapshot().id == snap   # just written: racy, so hashed
            time.sleep(0.2)
            assert ws.snapshot().id == snap   # trusted
            later = os.stat(root / "ln").st_mtime_ns + 2_000_000_000
            os.utime(root / "ln", ns=(later, later))
            assert ws.snapshot().id == snap   # hashed again


@pytest.mark.skipif(not IS_WINDOWS, reason="the disk has an exec bit here")
def test_the_exec_bit_outlives_a_racy_snapshot_on_windows(tree_factory):
    """Windows keeps the exec bit in the stat cache only: a snapshot that found the file racy
    keeps its mode there, so the next one still says 100755."""
    root = tree_factory({"a": "1"})
    ws = Workspace(root)
    snap = craft_snapshot(ws.store, {"a": b"1", "run": (0o100755, b"x")})
    ws.restore(snap)
    assert ws.snapshot().id == snap   # just written: racy, so hashed
    assert ws.snapshot().id == snap   # racy again or trusted: the mode is still known
    later = os.stat(root / "run").st_mtime_ns + 2_000_000_000
    os.utime(root / "run", ns=(later, later))
    assert ws.snapshot().id == snap   # hashed again
    time.sleep(0.2)
    assert ws.snapshot().id == snap


def test_case_only_rename(tree_factory):
    root = tree_factory({"readme.md": "lower\n", "Docs": {"x": "1"}})
    ws = Workspace(root)
    snap = ws.snapshot().id
    (root / "readme.md").unlink()
    (root / "README.md").write_text("upper\n")
    (root / "Docs" / "x").unlink()
    (root / "Docs").rmdir()
    (root / "docs").mkdir()
    (root / "docs" / "x").write_text("1")
    ws.restore(snap)
    assert sorted(os.listdir(root)) == ["Docs", "readme.md"]
    assert (root / "readme.md").read_text() == "lower\n"
    assert ws.snapshot().id == snap


def test_store_under_root_is_never_touched(tree_factory):
    root = tree_factory({"a": "1"})
    ws = Workspace(root, store=root / ".undostore-store")
    snap = ws.snapshot().id
    (root / "b").write_text("2")
    store_files = sorted(os.listdir(ws.store.path))
    ws.restore(snap)
    assert (root / ".undostore-store").is_dir()
    assert set(store_files) <= set(os.listdir(ws.store.path))
    assert sorted(os.listdir(root)) == [".undostore-store", "a"]


def test_nested_repository_git_folder_is_left_alone(tree_factory):
    root = tree_factory({"a": "1", "sub": {"f": "x", ".git": {"HEAD": "ref: refs/heads/main\n"}}})
    ws = Workspace(root)
    snap = ws.snapshot().id
    (root / "sub" / "f").unlink()
    (root / "sub" / ".git" / "HEAD").write_text("changed by git\n")
    ws.restore(snap)
    assert (root / "sub" / "f").read_text() == "x"
    assert (root / "sub" / ".git" / "HEAD").read_text() == "changed by git\n"


def test_large_file_is_streamed_and_restored_exactly(tree_factory):
    big = os.urandom(3 << 20) * 4     # 12 MiB: above the in-memory bound of a restore
    root = tree_factory({"big.bin": big, "small": "s"})
    ws = Workspace(root)
    snap = ws.snapshot().id
    (root / "big.bin").write_bytes(b"truncated")
    ws.restore(snap)
    assert (root / "big.bin").read_bytes() == big
    assert temp_files(root) == []



def test_a_large_file_is_checked_and_restored_in_constant_memory(tree_factory):
    """The blob check before a restore reads a big record's CRC a chunk at a time, and the
    write streams it: neither holds the file (24 MiB) whole."""
    big = os.urandom(24 << 20)
    root = tree_factory({"big.bin": big})
    ws = Workspace(root)
    snap = ws.snapshot().id
    (root / "big.bin").unlink()
    tracemalloc.start()
    try:
        ws.restore(snap)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert (root / "big.bin").read_bytes() == big
    assert peak < 8 << 20, f"peak {peak} bytes while restoring a 24 MiB file"

# --- random round trips --------------------------------------------------------------------------

_names = st.sampled_from(["a", "b", "c", "d.txt", "e.py", "F"])
_content = st.binary(max_size=64)
_ops = st.lists(st.tuples(st.sampled_from(["edit", "add", "delete", "chmod", "symlink",
                                           "file_to_folder", "folder_to_file", "ignored"]),
                          st.lists(_names, min_size=1, max_size=3), _content),
                max_size=12)


def _existing(root: str) -> tuple[list[str], list[str]]:
    files, folders = [], []
    for folder, dirs, names in os.walk(root):
        dirs[:] = [d for d in dirs if d != "_store" and not os.path.islink(os.path.join(folder, d))]
        rel = os.path.relpath(folder, root)
        if rel != ".":
            folders.append(rel)
        files += [os.path.normpath(os.path.join(rel, n)) for n in names if n != ".gitignore"]
    return sorted(files), sorted(folders)


def _apply(root: str, op: str, parts: list[str], data: bytes) -> None:
    files, folders = _existing(root)
    pick = zlib.crc32("/".join(parts).encode())  # deterministic (hash() is salted)
    path = os.path.join(root, *parts)
    try:
        if op in ("add", "ignored"):
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path + (".log" if op == "ignored" else ""), "wb") as f:
                f.write(data)
        elif op == "edit" and files:
            with open(os.path.join(root, files[pick % len(files)]), "wb") as f:
                f.write(data + b"!")
        elif op == "delete" and files:
            os.unlink(os.path.join(root, files[pick % len(files)]))
        elif op == "chmod" and files and not IS_WINDOWS:
            target = os.path.join(root, files[pick % len(files)])
            if not os.path.islink(target):
                os.chmod(target, os.lstat(target).st_mode ^ 0o111)
        elif op == "symlink" and not IS_WINDOWS:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            if not os.path.lexists(path):
                os.symlink(parts[-1] + "-target", path)
        elif op == "file_to_folder" and files:
            target = os.path.join(root, files[pick % len(files)])
            os.unlink(target)
            os.mkdir(target)
            with open(os.path.join(target, "inside"), "wb") as f:
                f.write(data)
        elif op == "folder_to_file" and folders:
            target = os.path.join(root, folders[pick % len(folders)])
            shutil.rmtree(target)
            with open(target, "wb") as f:
                f.write(data)
    except (FileExistsError, NotADirectoryError, IsADirectoryError, FileNotFoundError,
            PermissionError):  # Windows: opening a folder as a file is "permission denied"
        pass  # the random path ran into what another operation made; skip this one


def _ignored(path: str) -> bool:
    """What `*.log` ignores: a .log file, or anything inside a folder named *.log."""
    return any(part.endswith(".log") for part in path.rstrip("/").split("/"))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(first=_ops, second=_ops)
def test_random_round_trip_restores_byte_for_byte(first, second):
    base = tempfile.mkdtemp(prefix="undostore-prop-")
    try:
        root = os.path.join(base, "root")
        make_tree(root, {".gitignore": "*.log\n", "a": "1", "d": {"b": "2", "e": {"c": "3"}}})
        ws = Workspace(root, store=os.path.join(base, "store"))
        for op in first:
            _apply(root, op[0], op[1], op[2])
        snap = ws.snapshot().id
        wanted = {p: v for p, v in disk_state(root).items() if not _ignored(p)}
        for op in second:
            _apply(root, op[0], op[1], op[2])
        ignored = {p: v for p, v in disk_state(root).items() if _ignored(p)}
        before = disk_state(root)
        try:
            ws.restore(snap)
        except ConflictError as err:
            # The one refusal a random history may earn: the snapshot has a file where a
            # folder now holds ignored files, which a restore never deletes.
            assert os.path.isdir(os.path.join(root, err.path))
            assert any(p.startswith(err.path + "/") for p in ignored)
            assert disk_state(root) == before
            ws.close()
            return
        now = disk_state(root)
        # Folders holding only ignored files are kept: compare files, not leftover folders.
        assert {p: v for p, v in now.items() if not _ignored(p) and not p.endswith("/")} == \
            {p: v for p, v in wanted.items() if not p.endswith("/")}
        assert {p: v for p, v in now.items() if _ignored(p)} == ignored
        assert ws.snapshot().id == snap
        assert temp_files(root) == []
        for op in first:   # changes after the restore: the cache it left must not hide them
            _apply(root, op[0], op[1], op[2])
        with Workspace(root, store=os.path.join(base, "fresh")) as fresh:
            assert ws.snapshot().id == fresh.snapshot().id
        ws.close()
    finally:
        shutil.rmtree(base, ignore_errors=True)


def _open_descriptors(*under: str) -> list[str] | None:
    """What this process holds open below the folders `under` (all when none is named): only
    what a restore there can have opened, not what other tests or threads hold."""
    listing = "/proc/self/fd"
    if not os.path.isdir(listing):
        return None
    held = []
    for fd in os.listdir(listing):
        try:
            target = os.readlink(os.path.join(listing, fd))
        except OSError:
            continue   # closed meanwhile (the listing's own descriptor)
        if not under or any(target == u or target.startswith(u + os.sep) for u in under):
            held.append(target)
    return sorted(held)


@pytest.mark.skipif(IS_WINDOWS or _open_descriptors() is None,
                    reason="POSIX: a listing of open descriptors")
def test_restores_leave_no_descriptor_open(tree_factory):
    """An agent host embeds the library for hours: each restore must close every descriptor it
    opened."""
    root = tree_factory({f"d{i}": {f"f{j}": f"old {i} {j}\n" for j in range(40)}
                         for i in range(25)})
    ws = Workspace(root)
    old = ws.snapshot().id
    for i in range(25):
        for j in range(40):
            with open(os.path.join(root, f"d{i}", f"f{j}"), "w") as f:
                f.write(f"new {i} {j}\n")
    new = ws.snapshot().id
    ws.restore(old)            # the first restore's own opens (the store's packs) are counted out
    places = (os.path.realpath(root), os.path.realpath(ws.store.path))
    before = _open_descriptors(*places)
    for target in (new, old, new):
        ws.restore(target)
    assert _open_descriptors(*places) == before
    with open(os.path.join(root, "d3", "f7")) as f:
        assert f.read() == "new 3 7\n"
