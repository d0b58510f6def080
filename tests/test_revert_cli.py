"""`undostore revert` as a real process: one turn taken back, conflicts refused (exit 3, every
path named, one JSON object) or merged with markers (`--merge`), dry run, the question, and the
safety snapshot that takes a revert back."""

from __future__ import annotations

import json

from undostore import Workspace

from .restore_support import disk_state

LINES = "".join(f"line {i}\n" for i in range(1, 31))


def _edit(text: str, number: int, new: str) -> str:
    lines = text.splitlines(keepends=True)
    lines[number - 1] = new + "\n"
    return "".join(lines)


def _history(tree_factory):
    """A root with points p1 (start) and p2 (after turn 1: line 3 and new.txt), then turn 2
    edits line 25. Returns (root, p1, p2)."""
    root = tree_factory({"a.txt": LINES, "b.txt": "b\n"})
    with Workspace(root) as ws:
        p1 = ws.snapshot(session="agent").id
        (root / "a.txt").write_text(_edit(LINES, 3, "turn 1"), newline="")
        (root / "new.txt").write_text("from turn 1\n", newline="")
        p2 = ws.snapshot(session="agent").id
    (root / "a.txt").write_text(_edit(_edit(LINES, 3, "turn 1"), 25, "turn 2"), newline="")
    return root, p1, p2


def test_revert_of_one_undo_point_takes_back_that_turn_and_keeps_the_next(tree_factory, cli):
    root, p1, _ = _history(tree_factory)
    done = cli.run("revert", p1[:10], "--yes", "--json", root=root)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert {"target", "safety", "created", "modified", "deleted", "conflicts"} <= result.keys()
    assert (result["modified"], result["deleted"], result["conflicts"]) == (
        ["a.txt"], ["new.txt"], [])
    assert (root / "a.txt").read_bytes().decode() == _edit(LINES, 25, "turn 2")
    assert not (root / "new.txt").exists()
    # The safety snapshot takes the revert back.
    back = cli.run("restore", result["safety"], "--yes", root=root)
    assert back.returncode == 0, back.stderr
    assert (root / "new.txt").exists()


def test_conflicts_are_refused_with_exit_3_naming_every_path_and_nothing_changes(tree_factory, cli):
    root, p1, p2 = _history(tree_factory)
    (root / "a.txt").write_text(_edit(LINES, 3, "user"), newline="")
    (root / "new.txt").write_text("user changed it\n", newline="")
    before = disk_state(root)
    done = cli.run("revert", p1, p2, "--yes", "--json", root=root)
    assert done.returncode == 3, done.stderr
    doc = json.loads(done.stdout)
    assert doc["exit_code"] == 3 and doc["conflicts"] == ["a.txt", "new.txt"]
    assert "a.txt" in done.stderr and "new.txt" in done.stderr
    assert disk_state(root) == before


def test_merge_writes_git_style_markers_and_lists_the_conflicts(tree_factory, cli):
    root, p1, p2 = _history(tree_factory)
    (root / "a.txt").write_text(_edit(LINES, 3, "user"), newline="")
    done = cli.run("revert", p1, p2, "--merge", "--yes", "--json", root=root)
    assert done.returncode == 3, done.stderr   # markers remain: not done until resolved
    assert json.loads(done.stdout)["conflicts"] == ["a.txt"]
    text = (root / "a.txt").read_bytes().decode()
    assert f"<<<<<<< files now\nuser\n=======\nline 3\n>>>>>>> before {p1[:12]}\n" in text
    assert not (root / "new.txt").exists()


def test_dry_run_shows_the_plan_and_changes_nothing(tree_factory, cli):
    root, p1, p2 = _history(tree_factory)
    before = disk_state(root)
    done = cli.run("revert", p1, p2, "--dry-run", root=root)
    assert done.returncode == 0, done.stderr
    assert "M\ta.txt" in done.stdout and "D\tnew.txt" in done.stdout
    assert disk_state(root) == before


def test_without_terminal_and_without_yes_it_asks_for_yes_with_exit_2(tree_factory, cli):
    root, p1, p2 = _history(tree_factory)
    before = disk_state(root)
    done = cli.run("revert", p1, p2, root=root)
    assert done.returncode == 2 and "--yes" in done.stderr
    assert disk_state(root) == before


def test_an_unknown_id_is_a_usage_error(tree_factory, cli):
    root, _, _ = _history(tree_factory)
    done = cli.run("revert", "deadbeef", "--yes", root=root)
    assert done.returncode == 2 and "deadbeef" in done.stderr
