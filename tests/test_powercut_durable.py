"""The syncfs-or-fsync decision (undostore/store/durable.py): a root on FUSE, or with a FUSE
mount below it, takes the per-file fsync path; a local root keeps syncfs."""

from __future__ import annotations

import os
import sys

import pytest

from tests.powercut.fixture import powercut  # noqa: F401 (fixture)
from undostore.store.durable import Durability, syncfs_reaches_disk

linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"),
                                reason="syncfs is Linux's")


@linux_only
def test_a_local_root_keeps_syncfs(tmp_path):
    assert syncfs_reaches_disk(str(tmp_path))
    assert not Durability(str(tmp_path)).fsync_each_file


def test_a_root_on_fuse_or_with_fuse_below_it_fsyncs_each_file(powercut, tmp_path):  # noqa: F811
    fs = powercut("ordered")
    root = fs.path("root")
    os.makedirs(root)
    assert not syncfs_reaches_disk(root)
    assert Durability(root).fsync_each_file
    # a local root with the FUSE mount below it (fs.mountpoint is under tmp_path)
    assert not syncfs_reaches_disk(str(tmp_path))
