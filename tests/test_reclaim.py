"""reclaim.Reclaimer: old files get a second name before they are replaced, and those names are
unlinked right away or on a pool (where unlinks are slow); the files a user sees change exactly
as with a plain replace."""

from __future__ import annotations

import os
import threading

import pytest

from undostore.restore import reclaim as reclaim_module
from undostore.restore.reclaim import Reclaimer

from .conftest import IS_WINDOWS

pytestmark = pytest.mark.skipif(IS_WINDOWS or os.link not in os.supports_dir_fd,
                                reason="folder descriptors (POSIX)")


def _dir(path) -> int:
    return os.open(path, os.O_RDONLY | os.O_DIRECTORY)


@pytest.fixture(params=["right away", "on the pool"], autouse=True)
def way(request, monkeypatch) -> str:
    """Each test runs both ways, whatever an unlink costs on this machine."""
    slow = float("inf") if request.param == "right away" else 0.0
    monkeypatch.setattr(reclaim_module, "PROBE", 1)
    monkeypatch.setattr(reclaim_module, "SLOW", slow)
    return request.param


def _pool_threads() -> int:
    return sum(t.name == "undostore-reclaim" for t in threading.enumerate())


def test_replaced_files_hold_the_new_bytes_and_the_old_inodes_are_freed(tmp_path):
    tmp_path = tmp_path / "root"
    tmp_path.mkdir()
    for i in range(300):
        (tmp_path / f"f{i}").write_text(f"old {i}")
        (tmp_path / f"t{i}").write_text(f"new {i}")
    fd = _dir(tmp_path)
    reclaim = Reclaimer()
    try:
        for i in range(300):
            assert reclaim.set_aside(fd, f"f{i}", f"aside{i}")
            os.replace(f"t{i}", f"f{i}", src_dir_fd=fd, dst_dir_fd=fd)
            reclaim.discard(fd, f"aside{i}")
    finally:
        os.close(fd)   # the pool works on its own copies of the descriptor
        reclaim.close()
    assert sorted(os.listdir(tmp_path)) == sorted(f"f{i}" for i in range(300))
    assert all((tmp_path / f"f{i}").read_text() == f"new {i}" for i in range(300))
    assert reclaim.failed == []


def test_another_hard_link_of_a_replaced_file_keeps_its_content(tmp_path):
    tmp_path = tmp_path / "root"
    tmp_path.mkdir()
    (tmp_path / "f").write_text("old")
    os.link(tmp_path / "f", tmp_path / "other-name")
    (tmp_path / "t").write_text("new")
    fd = _dir(tmp_path)
    reclaim = Reclaimer()
    assert reclaim.set_aside(fd, "f", "aside")
    os.replace("t", "f", src_dir_fd=fd, dst_dir_fd=fd)
    reclaim.discard(fd, "aside")
    reclaim.close()
    os.close(fd)
    assert (tmp_path / "f").read_text() == "new"
    assert (tmp_path / "other-name").read_text() == "old"
    assert os.stat(tmp_path / "other-name").st_nlink == 1


def test_a_symlink_is_set_aside_itself_never_its_target(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "target").write_text("not ours")
    root = tmp_path / "root"
    root.mkdir()
    os.symlink(outside / "target", root / "link")
    fd = _dir(root)
    reclaim = Reclaimer()
    assert reclaim.set_aside(fd, "link", "aside")
    assert os.path.islink(root / "aside")
    reclaim.discard(fd, "aside")
    reclaim.close()
    os.close(fd)
    assert (outside / "target").read_text() == "not ours"
    assert os.stat(outside / "target").st_nlink == 1
    assert sorted(os.listdir(root)) == ["link"]


def test_a_name_that_cannot_be_unlinked_is_reported_and_drain_returns(tmp_path):
    tmp_path = tmp_path / "root"
    tmp_path.mkdir()
    (tmp_path / "a-folder").mkdir()
    fd = _dir(tmp_path)
    reclaim = Reclaimer()
    reclaim.discard(fd, "a-folder")
    reclaim.discard(fd, "never-existed")   # already gone: not a failure
    reclaim.close()
    os.close(fd)
    assert [name for name, _ in reclaim.failed] == ["a-folder"]
    assert (tmp_path / "a-folder").is_dir()


def _folder_of(tmp_path, count: int):
    """A folder holding files f0 ... f<count - 1>, and a descriptor of it."""
    root = tmp_path / "root"
    root.mkdir()
    for i in range(count):
        (root / f"f{i}").write_text("x")
    return root, _dir(root)


def test_the_pool_starts_only_where_unlinks_are_slow(tmp_path, way):
    root, fd = _folder_of(tmp_path, 40)
    reclaim = Reclaimer()
    try:
        for i in range(40):
            reclaim.discard(fd, f"f{i}")
        assert (_pool_threads() > 0) == (way == "on the pool")
        reclaim.drain()
        assert os.listdir(root) == []
    finally:
        reclaim.close()
        os.close(fd)
    assert _pool_threads() == 0


def test_names_queued_for_the_pool_are_bounded(tmp_path, monkeypatch):
    """Each queued name holds a descriptor: past MAX_PENDING, discard waits for the pool."""
    monkeypatch.setattr(reclaim_module, "PROBE", 1)
    monkeypatch.setattr(reclaim_module, "SLOW", 0.0)
    monkeypatch.setattr(reclaim_module, "MAX_PENDING", 3)
    root, fd = _folder_of(tmp_path, 200)
    reclaim = Reclaimer()
    most = 0
    try:
        for i in range(200):
            reclaim.discard(fd, f"f{i}")
            most = max(most, reclaim._pending)
        reclaim.drain()
    finally:
        reclaim.close()
        os.close(fd)
    assert 0 < most <= 3
    assert os.listdir(root) == [] and reclaim.failed == []
