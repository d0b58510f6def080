"""A file system whose folder times never move (object-store FUSE mounts such as s3fs and
gcsfuse report them so): a folder's stamp cannot vouch for its cached listing there. On FUSE
the walk never reuses a listing without reading it (by name at least), so every add, delete and
rename is seen and each id is git's; and wherever a listing that was reused still named a folder
that is gone, the next try reads that listing again instead of failing. Run on the power-cut
FUSE file system (tests/powercut) with its folder times frozen."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from tests.powercut.fixture import powercut  # noqa: F401 (fixture)
from undostore import Workspace
from undostore.snapshot import snapshot as snapshot_module


def _frozen_root(powercut) -> Path:  # noqa: F811
    fs = powercut("ordered", frozen_folder_times=True)
    root = Path(fs.mountpoint) / "root"
    for rel, text in (("a/x.txt", "x"), ("a/deep/y.txt", "y"), ("b/z.txt", "z"), ("top.txt", "t")):
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


@pytest.fixture
def walk_only(monkeypatch):
    monkeypatch.setenv("UNDOSTORE_FSMONITOR", "off")


def test_every_add_delete_and_rename_is_seen_where_folder_times_never_move(
        powercut, git, tmp_path, walk_only):  # noqa: F811
    root = _frozen_root(powercut)
    store = tmp_path / "store"

    def snap() -> str:
        with Workspace(root, store) as ws:
            return ws.snapshot().id

    assert snap() == git.write_tree(root)
    before = os.stat(root / "a").st_mtime_ns
    (root / "a" / "new.txt").write_text("n")
    assert os.stat(root / "a").st_mtime_ns == before      # the folder's time did not move
    assert snap() == git.write_tree(root)                  # the added file is in the id
    shutil.rmtree(root / "b")
    assert snap() == git.write_tree(root)                  # a deleted folder: no failure
    os.rename(root / "a" / "deep", root / "deep")
    (root / "a" / "x.txt").unlink()
    assert snap() == git.write_tree(root)


def test_a_folder_gone_from_a_reused_listing_has_that_listing_read_again(
        powercut, git, tmp_path, walk_only, monkeypatch):  # noqa: F811
    """Where the file system is not known to freeze folder times (here: told it is not FUSE),
    a deleted folder's parent keeps its stamp and its cached listing is reused: the walk meets
    the folder gone, and the next try reads the parent again (before: every snapshot failed,
    "the tree kept changing")."""
    root = _frozen_root(powercut)
    store = tmp_path / "store"
    monkeypatch.setattr(snapshot_module, "on_fuse", lambda _root: False)
    with Workspace(root, store) as ws:
        ws.snapshot()
        shutil.rmtree(root / "b")
        assert ws.snapshot().id == git.write_tree(root)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="the lstats split needs fork")
def test_where_folder_times_never_move_a_second_process_serves_the_names_read_again(
        powercut, git, tmp_path, walk_only):  # noqa: F811
    """The walk reads each listing again by name there; a second process's answers
    (snapshot/lstatsplit.py) then spare it the files' lstats, and every change made before the
    snapshot is still in its id: a new file, one removed, one rewritten in place."""
    import time

    from undostore.limits import Limits

    from .process_support import fork_finished_first

    root = _frozen_root(powercut)

    with Workspace(root, tmp_path / "store",
                   limits=Limits(split_lstat_min_files=0, split_chunk_files=2)) as ws:
        ws.fork = fork_finished_first
        assert ws.snapshot().id == git.write_tree(root)
        time.sleep(0.1)   # past the racy window: the entries saved next are trusted
        ws.snapshot()
        quiet = ws.snapshot()
        assert quiet.vouched > 0 and quiet.id == git.write_tree(root)
        (root / "a" / "new.txt").write_text("n")
        (root / "b" / "z.txt").unlink()
        with open(root / "a" / "deep" / "y.txt", "r+") as f:
            f.write("Y")
        assert ws.snapshot().id == git.write_tree(root)
