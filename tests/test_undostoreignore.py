"""`.undostoreignore` at the root: gitignore syntax, the same engine, applied on top of git's
rules; snapshots leave out what it names and restores never touch it."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from undostore import SnapshotError, Workspace

from .conftest import IS_WINDOWS


def snapshot_id(root: Path) -> str:
    with Workspace(root) as ws:
        return ws.snapshot().id


def captured(root: Path) -> list[str]:
    with Workspace(root) as ws:
        snap = ws.snapshot().id
        return sorted(p for p, _, _ in ws.store.iter_tree_files(bytes.fromhex(snap)))


def git_with_exclude(git, root: Path, patterns: str) -> str:
    """git's tree id with `patterns` in the private git dir's info/exclude (the same patterns,
    seen by git as its own lowest-precedence excludes)."""
    git_dir = git.private_dir(root)
    (git_dir / "info").mkdir(exist_ok=True)
    (git_dir / "info" / "exclude").write_text(patterns)
    return git.write_tree(root)


def test_files_and_folders_it_names_are_left_out_like_gits_excludes(tree_factory, git):
    patterns = "server.log\n/tmp/\n*.pid\ncache/**/*.bin\n!keep.pid\n"
    root = tree_factory({
        ".undostoreignore": patterns, "server.log": "busy", "app.pid": "1", "keep.pid": "2",
        "tmp": {"a": "a", "deep": {"b": "b"}}, "src": {"tmp": {"nested": "kept"}, "x.py": "x",
                                                     "server.log": "also busy"},
        "cache": {"one": {"two": {"x.bin": "x", "x.txt": "t"}}},
    })
    assert snapshot_id(root) == git_with_exclude(git, root, patterns)
    assert captured(root) == [".undostoreignore", "cache/one/two/x.txt", "keep.pid",
                              "src/tmp/nested", "src/x.py"]


def test_it_wins_over_a_gitignore_negation(tree_factory):
    root = tree_factory({".gitignore": "*.log\n!server.log\n", ".undostoreignore": "*.log\n",
                         "server.log": "s", "a.txt": "a"})
    assert captured(root) == [".gitignore", ".undostoreignore", "a.txt"]


def test_its_negation_cannot_bring_back_what_git_ignores(tree_factory):
    root = tree_factory({".gitignore": "*.log\n", ".undostoreignore": "!server.log\n",
                         "server.log": "s", "a.txt": "a"})
    assert captured(root) == [".gitignore", ".undostoreignore", "a.txt"]


def test_without_the_file_the_id_is_gits(tree_factory, git):
    root = tree_factory({"server.log": "s", "d": {".undostoreignore": "*\n", "f": "f"}})
    # Only the root's file counts: a nested one is an ordinary file.
    assert snapshot_id(root) == git.write_tree(root)


def test_restore_never_touches_what_it_excludes(tree_factory):
    root = tree_factory({"app.py": "v1\n", "server.log": "log v1\n", "logs": {"a.log": "a1"}})
    with Workspace(root) as ws:
        old = ws.snapshot().id   # taken before the file existed: it holds the logs
    (root / ".undostoreignore").write_text("server.log\nlogs/\nfresh.log\n")
    (root / "app.py").write_text("v2\n")
    (root / "server.log").write_text("live log\n")
    (root / "logs" / "a.log").write_text("a live")
    (root / "fresh.log").write_text("new log\n")
    with Workspace(root) as ws:
        result = ws.restore(old)
    assert (root / "app.py").read_text() == "v1\n"
    assert (root / "server.log").read_text() == "live log\n"
    assert (root / "logs" / "a.log").read_text() == "a live"
    assert (root / "fresh.log").read_text() == "new log\n"
    assert not (root / ".undostoreignore").exists()   # it is an ordinary file of the tree
    touched = {*result.created, *result.modified, *result.deleted}
    assert touched == {"app.py", ".undostoreignore"}


@pytest.mark.skipif(IS_WINDOWS, reason="needs a second process appending (POSIX timing)")
def test_the_keeps_changing_error_suggests_it(tree_factory):
    root = tree_factory({"a.txt": "a"})
    growing = root / "busy.log"
    growing.write_bytes(os.urandom(32 << 20))
    appender = subprocess.Popen([sys.executable, "-c", textwrap.dedent(f"""
        with open({str(growing)!r}, "ab", buffering=0) as f:
            while True:
                f.write(b"x" * 4096)
        """)])
    try:
        with pytest.raises(SnapshotError) as caught:
            snapshot_id(root)
    finally:
        appender.kill()
        appender.wait()
    assert ".undostoreignore" in caught.value.message and "busy.log" in caught.value.message
    (root / ".undostoreignore").write_text("busy.log\n")
    assert "busy.log" not in captured(root)
