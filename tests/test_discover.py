"""Root discovery (the contract's "root"): from a sub-folder the root's store, its ignore rules
and its sessions; a store for a folder inside a protected root only with --root; the history
commands' default session; what is said on stderr."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from undostore import Workspace
from undostore.store.discover import FOUND_CWD, FOUND_GIT, FOUND_STORE, discover


def run(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "undostore", *args], capture_output=True,
                          text=True, cwd=cwd, timeout=60)


def stores() -> list[str]:
    folder = Path(os.environ["UNDOSTORE_HOME"]) / "stores"
    return sorted(p.name for p in folder.iterdir()) if folder.exists() else []


def snapshot_id(cwd: Path, *extra: str) -> str:
    result = run(*extra, "snapshot", "--json", cwd=cwd)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)["id"]


@pytest.fixture
def repo(tree_factory) -> Path:
    """A git work tree whose .gitignore must apply from every sub-folder."""
    return tree_factory({".git": {"HEAD": "ref: refs/heads/main\n"},
                         ".gitignore": "__pycache__/\n", "a.txt": "a",
                         "src": {"m.py": "x", "__pycache__": {"m.pyc": "junk"},
                                 "deep": {"n.py": "y"}}})


def test_from_a_sub_folder_the_same_id_one_store_and_the_roots_sessions(repo):
    from_sub = snapshot_id(repo / "src" / "deep")
    assert run("snapshot", "--session", "agent", "--label", "from sub",
               cwd=repo / "src").returncode == 0
    from_root = snapshot_id(repo)
    assert from_sub == from_root
    assert len(stores()) == 1
    with Workspace(repo) as ws:
        assert from_root == ws.snapshot().id   # the root's .gitignore applied from src/ too
    log = json.loads(run("log", "--json", cwd=repo / "src" / "deep").stdout)
    assert [p["label"] for p in log["undo"]] == ["from sub"]
    status = run("status", cwd=repo / "src")
    assert status.stdout == "undo:1 redo:0\n"


def test_a_store_found_above_wins_over_a_git_work_tree_below(tree_factory):
    outer = tree_factory({"a.txt": "a", "inner": {".git": {}, "b.txt": "b"}})
    snapshot_id(outer, "--root", str(outer))   # outer is protected
    assert discover(outer / "inner").root == str(outer.resolve())
    assert snapshot_id(outer / "inner") == snapshot_id(outer)
    assert len(stores()) == 1


def test_no_store_inside_a_protected_root_unless_root_names_it(tree_factory):
    top = tree_factory({"a.txt": "a", "sub": {"b.txt": "b"}})
    snapshot_id(top, "--root", str(top))
    snapshot_id(top / "sub")
    assert len(stores()) == 1, "a command from sub/ used the store of the protected root"
    sub_alone = snapshot_id(top / "sub", "--root", str(top / "sub"))
    assert len(stores()) == 2
    with Workspace(top / "sub") as ws:
        assert ws.snapshot().id == sub_alone


def test_stderr_says_which_store_was_found_or_that_none_was(tree_factory, repo):
    first = run("snapshot", cwd=repo / "src")
    assert f"no store found at or above {(repo / 'src').resolve()}" in first.stderr
    assert f"protecting {repo.resolve()}" in first.stderr
    again = run("snapshot", cwd=repo / "src")
    assert f"using the store of {repo.resolve()}" in again.stderr
    quiet = run("snapshot", cwd=repo)
    assert quiet.stderr == "", "nothing to say when the root is the current folder"


def test_a_moved_project_is_told_that_its_store_came_along(tmp_path):
    project = tmp_path / "old" / "proj"
    project.mkdir(parents=True)
    (project / "a.txt").write_text("a")
    snapshot_id(project)
    moved = tmp_path / "new" / "proj"
    moved.parent.mkdir()
    project.rename(moved)
    result = run("snapshot", cwd=moved)
    assert "took its store along" in result.stderr and "new store" not in result.stderr


def test_workspace_without_a_root_finds_it_the_same_way(repo, monkeypatch):
    monkeypatch.chdir(repo / "src" / "deep")
    with Workspace() as ws:
        assert ws.root == str(repo.resolve())
        assert ws.discovery.how == FOUND_GIT
        ws.snapshot(session="lib")
    monkeypatch.chdir(repo / "src")
    with Workspace() as ws:
        assert ws.discovery.how == FOUND_STORE
        assert [s.name for s in ws.sessions()] == ["lib"]


def test_a_git_file_marks_a_work_tree_top_too(tree_factory):
    top = tree_factory({".git": "gitdir: /elsewhere/.git/worktrees/x\n", "d": {"f": "1"}})
    found = discover(top / "d")
    assert (found.root, found.how) == (str(top.resolve()), FOUND_GIT)


def test_the_home_folder_is_passed_over_even_with_a_dotfiles_git(tmp_path):
    home = Path(os.environ["HOME"])
    (home / ".git").mkdir()
    project = home / "proj" / "sub"
    project.mkdir(parents=True)
    found = discover(project)
    assert (found.root, found.how) == (str(project.resolve()), FOUND_CWD)
    assert snapshot_id(project)   # and the command works there, without --force


def test_history_commands_default_to_the_session_with_the_newest_point(tree_factory):
    root = tree_factory({"a.txt": "0"})
    with Workspace(root) as ws:
        ws.snapshot(session="older")
        (root / "a.txt").write_text("1")
        ws.snapshot(session="newer")
    (root / "a.txt").write_text("2")
    status = run("status", "--json", cwd=root)
    assert json.loads(status.stdout)["session"] == "newer"
    assert "session 'newer'" in status.stderr
    undo = run("undo", "--yes", cwd=root)
    assert undo.returncode == 0, undo.stderr
    assert "session 'newer'" in undo.stderr
    assert (root / "a.txt").read_text() == "1"
    # The undo made 'newer' the most recent again (its redo entry): redo finds it.
    assert run("redo", "--yes", cwd=root).returncode == 0
    assert (root / "a.txt").read_text() == "2"
    named = run("log", "--session", "older", "--json", cwd=root)
    assert named.stderr == "" and json.loads(named.stdout)["session"] == "older"


def test_with_no_session_anywhere_the_default_is_default(tree_factory):
    root = tree_factory({"a.txt": "0"})
    result = run("undo", "--yes", cwd=root)
    assert result.returncode == 2
    assert "nothing to undo in session 'default'" in result.stderr


@pytest.mark.skipif(sys.platform != "win32", reason="drive letters (Windows)")
def test_drive_letter_case_and_separators_find_the_same_root_and_store(repo):
    snapshot_id(repo)
    plain = discover(repo / "src")
    spelled = str(repo / "src").replace("\\", "/")
    spelled = spelled[0].swapcase() + spelled[1:]        # c:/... for C:\...
    found = discover(spelled)
    assert (found.root.lower(), found.store.lower()) == (plain.root.lower(), plain.store.lower())
    assert found.existed and found.how == FOUND_STORE
