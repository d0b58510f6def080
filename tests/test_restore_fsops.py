"""fsops.DirTree, the folder descriptors every restore change goes through: a folder swapped for
a symlink or for another folder is noticed (when reopened, when verified, and on the path-based
Windows strategy before each operation), and a restore over more folders than the descriptor
budget still works."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from undostore import Workspace
from undostore.restore.fsops import HAS_DIR_FD, DirTree, NotAFolder

posix_links = pytest.mark.skipif(sys.platform == "win32", reason="symlinks and dir_fd")


def _tree(tmp_path, names):
    for name in names:
        (tmp_path / name).mkdir(parents=True)
        (tmp_path / name / "f").write_text(name)


@pytest.mark.parametrize("use_fds", [True, False] if HAS_DIR_FD else [False])
@posix_links
def test_folder_swapped_for_a_symlink_is_refused(tmp_path, use_fds) -> None:
    _tree(tmp_path, ["d"])
    (tmp_path / "elsewhere").mkdir()
    tree = DirTree(str(tmp_path), use_fds=use_fds)
    try:
        d = tree.folder("d")
        assert d is not None
        os.rename(tmp_path / "d", tmp_path / "d.moved")
        os.symlink("elsewhere", tmp_path / "d")
        if use_fds:
            # The descriptor still names the real folder: the write lands there, never outside.
            fd = tree.open(d, "new", os.O_WRONLY | os.O_CREAT | os.O_EXCL)
            os.close(fd)
            assert (tmp_path / "d.moved" / "new").exists()
        else:
            # Windows' strategy: each component checked again right before the operation.
            with pytest.raises(NotAFolder):
                tree.open(d, "new", os.O_WRONLY | os.O_CREAT | os.O_EXCL)
        assert os.listdir(tmp_path / "elsewhere") == []
        with pytest.raises(Exception) as caught:
            tree.verify()
        assert getattr(caught.value, "exit_code", None) == 3
        assert caught.value.path == "d"
    finally:
        tree.close()


@posix_links
def test_folder_replaced_while_its_descriptor_was_closed_is_noticed(tmp_path) -> None:
    _tree(tmp_path, ["a", "b", "c"])
    tree = DirTree(str(tmp_path), max_open=2)
    try:
        assert tree.folder("a") is not None
        assert tree.folder("b") is not None
        assert tree.folder("c") is not None    # over the budget: "a" and "b" were closed
        os.rename(tmp_path / "a", tmp_path / "a.old")
        (tmp_path / "a").mkdir()
        with pytest.raises(NotAFolder) as caught:
            tree.folder("a")
        assert caught.value.kind == "replaced"
    finally:
        tree.close()


@posix_links
def test_component_that_is_a_file_or_link_is_reported_by_kind(tmp_path) -> None:
    (tmp_path / "file").write_text("x")
    os.symlink(".", tmp_path / "link")
    tree = DirTree(str(tmp_path))
    try:
        with pytest.raises(NotAFolder) as as_file:
            tree.folder("file/below", create=True)
        assert as_file.value.kind == "file"
        with pytest.raises(NotAFolder) as as_link:
            tree.folder("link/below", create=True)
        assert as_link.value.kind == "link"
        assert tree.folder("missing") is None
    finally:
        tree.close()


def test_restore_over_more_folders_than_the_descriptor_budget(tmp_path) -> None:
    root = tmp_path / "p"
    names = [f"d{i:03d}/e{i % 7}" for i in range(600)]
    _tree(root, names)
    with Workspace(root, tmp_path / "store") as ws:
        target = ws.snapshot().id
        for i, name in enumerate(names):
            if i % 2:
                (root / name / "f").write_text("changed")
            else:
                os.unlink(root / name / "f")
        ws.snapshot()
        result = ws.restore(target)
        assert len(result.created) == 300 and len(result.modified) == 300
        assert ws.diff(target) == []


def test_restore_replaces_files_and_keeps_other_hard_links(tmp_path) -> None:
    """Each replaced file gets a new inode: another name of the old one keeps its content."""
    root = tmp_path / "root"
    _tree(root, [f"d{i}" for i in range(30)])
    with Workspace(root) as ws:
        before = ws.snapshot().id
        for i in range(30):
            (root / f"d{i}" / "f").write_text(f"changed {i}")
        os.link(root / "d0" / "f", tmp_path / "d0-link")   # another name, outside the root
        ws.snapshot()
        result = ws.restore(before)
        assert len(result.modified) == 30 and ws.snapshot().id == before
    assert (tmp_path / "d0-link").read_text() == "changed 0"


@pytest.mark.skipif(sys.platform == "win32", reason="no folder descriptors on Windows")
@pytest.mark.parametrize(("limit", "low", "high"), [(26, 2, 2), (40, 7, 9), (80, 16, 29),
                                                    (1024, 400, 501), (9_000, 4096, 4096)])
def test_folders_kept_open_are_half_of_the_descriptors_left(limit, low, high) -> None:
    """A restore keeps at most half of the descriptors its process has left open as folders
    (at least 2, at most 4,096): the 20 the host holds here count against it."""
    import resource
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    if hard != resource.RLIM_INFINITY and hard < limit:
        pytest.skip(f"the hard descriptor limit here is {hard}")
    script = ("import resource, sys\n"
              "hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]\n"
              f"resource.setrlimit(resource.RLIMIT_NOFILE, ({limit}, hard))\n"
              "from undostore.restore.fsops import folder_budget\n"
              "held = [open(sys.executable, 'rb') for _ in range(20)]\n"
              "print(folder_budget())\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          check=True)
    assert low <= int(done.stdout) <= high
