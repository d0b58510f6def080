"""The user's own git, looked at and never written (issue 57, item 5): each undo point keeps
the commit HEAD named as its turn began (usergit.py, read against `git rev-parse HEAD` in a
plain repository, with packed refs, a detached HEAD, a linked worktree, an unborn branch); an
`/undo` of a turn during which HEAD moved says so and how to move the branch back, and leaves
`.git` exactly as it was."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from undostore.usergit import head_commit

from .test_hook import hook, prompt_event
from .test_hook_tool_calls import SESSION, call

GIT = shutil.which("git")
pytestmark = pytest.mark.skipif(GIT is None, reason="git is the reference here (tests run it)")


def git(root: Path, *args: str) -> str:
    env = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "GIT_AUTHOR_NAME": "t",
           "GIT_AUTHOR_EMAIL": "t@example.com", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@example.com"}
    done = subprocess.run([GIT, "-C", str(root), *args], capture_output=True, text=True,
                          env=env, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def repository(root: Path) -> str:
    root.mkdir(parents=True, exist_ok=True)
    git(root, "init", "-q", "-b", "main")
    (root / "a.txt").write_text("a\n")
    git(root, "add", "a.txt")
    git(root, "commit", "-q", "-m", "first")
    return git(root, "rev-parse", "HEAD")


def test_head_is_read_as_git_reads_it(tmp_path):
    root = tmp_path / "repo"
    assert head_commit(str(tmp_path)) is None             # no git
    first = repository(root)
    assert head_commit(str(root)) == first
    (root / "b.txt").write_text("b\n")
    git(root, "add", "b.txt")
    git(root, "commit", "-q", "-m", "second")
    git(root, "pack-refs", "--all")                       # the branch only in packed-refs
    assert not (root / ".git" / "refs" / "heads" / "main").exists()
    assert head_commit(str(root)) == git(root, "rev-parse", "HEAD") != first
    git(root, "checkout", "-q", "--detach", first)        # HEAD a commit id
    assert head_commit(str(root)) == first
    linked = tmp_path / "linked"
    git(root, "worktree", "add", "-q", "-b", "side", str(linked), "main")
    assert (linked / ".git").is_file()                    # `gitdir: ...`, refs in commondir
    assert head_commit(str(linked)) == git(linked, "rev-parse", "HEAD")
    unborn = tmp_path / "unborn"
    unborn.mkdir()
    git(unborn, "init", "-q")
    assert head_commit(str(unborn)) is None


def _tree_state(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def test_undo_of_a_turn_that_committed_says_so_and_leaves_git_alone(tmp_path):
    root = tmp_path / "repo"
    first = repository(root)
    (root / ".gitignore").write_text(".claude/\n")
    assert hook(prompt_event(root, "fix and commit", SESSION)).returncode == 0

    def commit() -> None:   # the agent's shell: edit and commit
        (root / "a.txt").write_text("fixed\n")
        git(root, "commit", "-q", "-am", "fix")

    call(root, "Bash", "t1", commit, command="git commit -am fix")
    assert hook({"session_id": SESSION, "cwd": str(root), "hook_event_name": "Stop"}
                ).returncode == 0
    committed = git(root, "rev-parse", "HEAD")
    before = _tree_state(root / ".git")
    answer = hook(prompt_event(root, "/undo", SESSION))
    line = json.loads(answer.stdout)["reason"]
    assert "undid the last turn" in line, line
    assert f"your git HEAD moved since that turn began ({first[:12]} -> {committed[:12]})" \
        in line, line
    assert f"`git reset {first[:12]}`" in line, line
    assert (root / "a.txt").read_text() == "a\n"
    assert _tree_state(root / ".git") == before            # .git is the user's: untouched
    # The way out it names: the branch back, the files as the undo left them.
    git(root, "reset", "-q", first)
    assert git(root, "status", "--porcelain") == "?? .gitignore"


def test_a_turn_that_did_not_move_head_says_nothing_of_git(tmp_path):
    root = tmp_path / "repo"
    repository(root)
    assert hook(prompt_event(root, "edit", SESSION)).returncode == 0
    call(root, "Edit", "t1", lambda: (root / "a.txt").write_text("A\n"),
         file_path=str(root / "a.txt"))
    answer = hook(prompt_event(root, "/undo", SESSION))
    line = json.loads(answer.stdout)["reason"]
    assert "undid the last turn" in line and "git" not in line, line


def test_a_turn_a_call_began_with_no_prompt_keeps_head_too(tmp_path):
    """A call with no open turn (the host wired mid-conversation) starts a turn of its own:
    it keeps HEAD as the prompt's turn does, and its undo says the agent's commit stays."""
    from undostore import ToolCall, Workspace
    from undostore.history.toolcall import SHELL

    root = tmp_path / "repo"
    first = repository(root)
    (root / ".gitignore").write_text("*.log\n")
    with Workspace(root) as ws:
        ws.call_started(ToolCall("c1", "Bash", SHELL), "s")
        (root / "a.txt").write_text("fixed\n")
        git(root, "commit", "-q", "-am", "fix")
        ws.call_finished("c1", "s")
        done = ws.undo("s", confirm=lambda plan: True)
    assert done.git_moved is not None and done.git_moved.was == first
    assert done.to_json()["git_moved"] == {"was": first, "now": git(root, "rev-parse", "HEAD")}
    assert (root / "a.txt").read_text() == "a\n"
