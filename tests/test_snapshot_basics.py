"""The snapshot id is git's tree id; unchanged snapshots reuse the stat cache."""

from __future__ import annotations

import os

import pytest

from undostore import Workspace
from undostore.snapshot.snapshot import EMPTY_TREE

from .conftest import IS_WINDOWS, Exe, Link


def test_snapshot_id_equals_git_write_tree(tree_factory, git):
    root = tree_factory({
        ".gitignore": "*.log\nbuild/\n",
        "a.txt": "hello\n",
        "run.sh": Exe("#!/bin/sh\necho hi\n"),
        "src": {"m.py": "print(1)\n", "deep": {"x": b"\x00\x01binary"}},
        "build": {"out.o": "ignored"},
        "debug.log": "ignored",
        "empty": "",
        **({} if IS_WINDOWS else {"link": Link("a.txt")}),
    })
    os.mkdir(root / "empty_folder")
    result = Workspace(root).snapshot()
    assert result.id == git.write_tree(root)
    assert result.files == (7 if not IS_WINDOWS else 6)


def test_empty_root_gives_git_empty_tree(tree_factory):
    root = tree_factory({})
    assert Workspace(root).snapshot().id == EMPTY_TREE.hex()


def test_second_snapshot_of_unchanged_old_files_hashes_nothing(tree_factory):
    root = tree_factory({"a": "1", "d": {"b": "2"}})
    old = 1_000_000_000
    for path in (root / "a", root / "d" / "b"):
        os.utime(path, (old, old))
    ws = Workspace(root)
    first = ws.snapshot()
    second = ws.snapshot()
    assert first.id == second.id
    assert first.hashed == 2
    # ctime of freshly written files is "now", so they count as racy once; ask again.
    third = ws.snapshot()
    assert third.hashed <= second.hashed


@pytest.mark.skipif(IS_WINDOWS, reason="symlink privilege")
def test_snapshot_records_symlink_without_following(tree_factory, git):
    root = tree_factory({"target": {"f": "x"}, "link": Link("target")})
    assert Workspace(root).snapshot().id == git.write_tree(root)
