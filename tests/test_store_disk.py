"""The store's disk says no (full, read-only): the error names the store, not the file being
captured, and nothing half-written stays in the store. On a real small tmpfs (Linux, root: the
test mounts one; skipped where mounting is not permitted), through the real CLI.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from .restore_support import disk_state

CLI = [sys.executable, "-m", "undostore"]


@pytest.fixture
def small_disk(tmp_path: Path):
    """An 8 MB tmpfs, mounted for this test only."""
    if not sys.platform.startswith("linux") or os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs Linux and root")
    mount = tmp_path / "small"
    mount.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=8m", "tmpfs", str(mount)],
                          capture_output=True)
    if done.returncode != 0:
        pytest.skip(f"mount is not permitted here: {done.stderr.decode().strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def _snapshot(root: Path, store: Path, *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run([*CLI, "--root", str(root), "--store", str(store), *extra],
                          capture_output=True, text=True)


def _leftovers(store: Path) -> list[str]:
    """Pack files and temp files anywhere in the store."""
    found = []
    for folder, _, names in os.walk(store):
        for name in names:
            if ".undostore-tmp-" in name or name.endswith((".pack", ".idx")):
                found.append(os.path.join(folder, name))
    return sorted(found)


def _fill(disk: Path) -> None:
    with open(disk / "filler", "wb") as f:
        try:
            while True:
                f.write(b"\0" * 65536)
                f.flush()
        except OSError:
            pass


def test_a_file_larger_than_the_store_disk_fails_naming_the_store(small_disk, tree_factory):
    root = tree_factory({"big1.bin": os.urandom(12 << 20), "small.txt": "hello"})
    store = small_disk / "store"
    done = _snapshot(root, store, "snapshot")
    assert done.returncode == 1
    assert done.stderr.count("\n") == 1
    assert f"{store}: the store could not be written: No space left on device" in done.stderr
    assert "big1.bin" not in done.stderr and "cannot read" not in done.stderr
    assert _leftovers(store) == []


def test_a_full_store_disk_leaves_no_pack_at_any_size(small_disk, tree_factory):
    """Around the free space the pack fits and its index does not, or neither: either way the
    store keeps nothing of it; once it fits, the snapshot works."""
    root = tree_factory({})
    outcomes = []
    for step in range(14):
        store = small_disk / f"store-{uuid.uuid4().hex[:6]}"
        if (root / "data.bin").exists():
            (root / "data.bin").unlink()
        assert _snapshot(root, store, "snapshot").returncode == 0  # an empty store
        before = _leftovers(store)
        stat = os.statvfs(small_disk)
        free = stat.f_bavail * stat.f_frsize
        (root / "data.bin").write_bytes(os.urandom(max(free - 14000 + step * 1024, 4096)))
        done = _snapshot(root, store, "snapshot")
        outcomes.append(done.returncode)
        if done.returncode == 1:
            assert f"{store}: the store could not be written" in done.stderr, done.stderr
            assert _leftovers(store) == before, done.stderr
        else:
            assert done.returncode == 0, done.stderr
        shutil.rmtree(store)
    assert 1 in outcomes and 0 in outcomes


def test_a_read_only_store_disk_is_named(small_disk, tree_factory):
    root = tree_factory({"a": "1"})
    store = small_disk / "store"
    assert _snapshot(root, store, "snapshot").returncode == 0
    subprocess.run(["mount", "-o", "remount,ro", str(small_disk)], check=True)
    (root / "b").write_text("2")
    done = _snapshot(root, store, "snapshot")
    assert done.returncode == 1
    assert f"{store}: the store could not be written: Read-only file system" in done.stderr


def test_a_restore_with_the_store_disk_full_changes_nothing(small_disk, tree_factory):
    root = tree_factory({"a": "one", "b": "two"})
    store = small_disk / "store"
    first = _snapshot(root, store, "snapshot").stdout.strip()
    (root / "a").write_text("changed")
    (root / "c").write_text("new")
    assert _snapshot(root, store, "snapshot").returncode == 0
    before = disk_state(root)
    _fill(small_disk)
    done = _snapshot(root, store, "restore", first, "--yes")
    assert done.returncode == 1
    assert f"{store}: the store could not be written" in done.stderr
    assert disk_state(root) == before
    assert not os.listdir(store / "restore")
    os.unlink(small_disk / "filler")
    assert _snapshot(root, store, "restore", first, "--yes").returncode == 0
