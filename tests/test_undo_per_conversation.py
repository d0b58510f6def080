"""Undo is per conversation: each scenario of issue 44 through real `undostore` processes (the
CLI, and the hook as Claude Code runs it). An undo or redo changes only what its own turns
changed; the user's edits and other conversations' turns stay; an overlap refuses with nothing
changed (exit 3), `--merge` leaves markers (exit 3 until resolved), `--whole` puts the folder
back."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

from .conftest import Cli
from .test_hook import files, hook
from .test_hook import prompt_event as event_without_id


def prompt_event(root: Path, prompt: str, session: str) -> dict:
    """A prompt as Claude Code sends it, with its own `prompt_id`: each command here is one the
    user typed, never a duplicate of the one before. (Without an id, the same command arriving
    within 0.25 s of the first's answer is taken for a duplicate, hook_once.py: these tests'
    back-to-back commands then depended on how fast the hook started.)"""
    return event_without_id(root, prompt, session=session, prompt_id=uuid.uuid4().hex)


def stop_event(root: Path, session: str) -> dict:
    return {"session_id": session, "cwd": str(root), "hook_event_name": "Stop",
            "transcript_path": str(root / "t.jsonl"), "stop_hook_active": False}


def answer(result) -> str:  # noqa: ANN001 (a CompletedProcess)
    """The `/undo` line the hook gives the host to show."""
    assert result.returncode == 0, result.stderr
    doc = json.loads(result.stdout)
    assert doc["decision"] == "block"
    return doc["reason"]


def turn(root: Path, session: str, prompt: str, edits: dict[str, str | None]) -> None:
    """One turn in a host: the prompt's hook, the agent's edits, the after-turn hook."""
    assert hook(prompt_event(root, prompt, session=session)).returncode == 0
    for path, content in edits.items():
        if content is None:
            (root / path).unlink()
        else:
            (root / path).write_text(content)
    assert hook(stop_event(root, session)).returncode == 0


def test_redo_keeps_the_users_edit_made_after_the_undo(tree_factory, cli: Cli):
    root = tree_factory({"a.txt": "a\n", "b.txt": "b\n"})
    assert cli.run("snapshot", "-s", "s", root=root).returncode == 0
    (root / "a.txt").write_text("the agent's a\n")
    assert cli.run("undo", "-s", "s", "--yes", root=root).returncode == 0
    (root / "b.txt").write_text("the user's b\n")
    redone = cli.run("redo", "-s", "s", "--yes", "--json", root=root)
    assert redone.returncode == 0, redone.stderr
    assert json.loads(redone.stdout)["modified"] == ["a.txt"]
    assert files(root) == {"a.txt": "the agent's a\n", "b.txt": "the user's b\n"}


def test_one_conversations_undo_leaves_anothers_undone_turn_undone(tree_factory):
    root = tree_factory({"keep.txt": "k\n"})
    turn(root, "X", "make x", {"x1.txt": "x\n", "x2.txt": "x\n", "x3.txt": "x\n"})
    turn(root, "Y", "make y", {"y.txt": "y\n"})
    told_x = answer(hook(prompt_event(root, "/undo", session="X")))
    assert "'make x'" in told_x and "1 turn; 3 files" in told_x
    assert files(root) == {"keep.txt": "k\n", "y.txt": "y\n"}
    told_y = answer(hook(prompt_event(root, "/undo", session="Y")))
    assert "session 'Y' ('make y'; 1 turn; 1 file)" in told_y
    assert files(root) == {"keep.txt": "k\n"}        # X's turn stays undone
    answer(hook(prompt_event(root, "/redo", session="X")))
    assert files(root) == {"keep.txt": "k\n", "x1.txt": "x\n", "x2.txt": "x\n", "x3.txt": "x\n"}


def test_a_new_turn_after_an_undo_ends_the_redo_chain_once_it_changed_files(tree_factory):
    root = tree_factory({"a.txt": "0\n"})
    turn(root, "c", "first", {"a.txt": "1\n"})
    answer(hook(prompt_event(root, "/undo", session="c")))
    assert files(root) == {"a.txt": "0\n"}
    turn(root, "c", "a question only", {})           # changed nothing: the chain stays
    assert "redid the last turn" in answer(hook(prompt_event(root, "/redo", session="c")))
    assert files(root) == {"a.txt": "1\n"}
    answer(hook(prompt_event(root, "/undo", session="c")))
    turn(root, "c", "second", {"b.txt": "new\n"})    # changed a file: the chain ends
    told = answer(hook(prompt_event(root, "/redo", session="c")))
    assert "nothing to redo" in told
    assert files(root) == {"a.txt": "0\n", "b.txt": "new\n"}


def test_undo_undo_redo_redo_lands_on_the_newest_files(tree_factory):
    root = tree_factory({"a.txt": "0\n"})
    turn(root, "c", "one", {"a.txt": "1\n"})
    turn(root, "c", "two", {"b.txt": "2\n"})
    newest = files(root)
    for command in ("/undo", "/undo", "/redo", "/redo"):
        answer(hook(prompt_event(root, command, session="c")))
    assert files(root) == newest
    answer(hook(prompt_event(root, "/undo 2", session="c")))
    assert files(root) == {"a.txt": "0\n"}


def test_an_overlap_refuses_with_nothing_changed_and_names_the_two_ways_out(tree_factory,
                                                                            cli: Cli):
    root = tree_factory({"a.txt": "1\n2\n3\n", "b.txt": "b\n"})
    turn(root, "X", "edit a", {"a.txt": "1\nX\n3\n", "b.txt": "bx\n"})
    turn(root, "Y", "edit a too", {"a.txt": "1\nY\n3\n"})
    (root / "c.txt").write_text("the user's\n")
    before = files(root)
    refused = cli.run("undo", "-s", "X", "--yes", "--json", root=root)
    assert refused.returncode == 3
    doc = json.loads(refused.stdout)
    assert doc["conflicts"] == ["a.txt"] and doc["exit_code"] == 3
    message = doc["error"]["message"]
    assert "a.txt (turn 'edit a'; changed since by session 'Y', turn 'edit a too')" in message
    assert "--merge" in message and "--whole" in message
    assert files(root) == before
    told = answer(hook(prompt_event(root, "/undo", session="X")))
    assert told.startswith("undostore: undo: nothing changed") and "a.txt" in told
    assert "/undo --merge" in told and "/undo --whole" in told
    assert files(root) == before

    merged = cli.run("undo", "-s", "X", "--yes", "--merge", root=root)
    assert merged.returncode == 3, merged.stderr     # markers remain: never "done"
    assert "conflict: a.txt" in merged.stdout
    text = (root / "a.txt").read_text()
    assert "<<<<<<<" in text and "Y" in text and "2" in text
    assert (root / "b.txt").read_text() == "b\n" and (root / "c.txt").exists()
    assert cli.run("undo", "-s", "s-none", "--yes", root=root).returncode == 2

    (root / "a.txt").write_text("1\nresolved\n3\n")
    assert cli.run("redo", "-s", "X", "--yes", root=root).returncode == 3   # overlaps again
    whole = cli.run("undo", "-s", "Y", "--yes", "--whole", root=root)
    assert whole.returncode == 0, whole.stderr
    assert files(root) == {"a.txt": "1\nX\n3\n", "b.txt": "bx\n"}  # the folder at Y's point


def test_status_counts_what_undo_n_accepts(tree_factory, cli: Cli):
    root = tree_factory({"a.txt": "0\n"})
    for i in range(3):
        turn(root, "c", f"turn {i}", {"a.txt": f"{i + 1}\n"})
    turn(root, "c", "a question", {})
    status = json.loads(cli.run("status", "-s", "c", "--json", root=root).stdout)
    assert status["undo"] == 3
    assert cli.run("undo", "4", "-s", "c", "--yes", root=root).returncode == 2
    assert cli.run("undo", "3", "-s", "c", "--yes", root=root).returncode == 0
    assert files(root) == {"a.txt": "0\n"}


def test_revert_with_markers_left_exits_3(tree_factory, cli: Cli):
    root = tree_factory({"a.txt": "1\n"})
    point = cli.run("snapshot", "-s", "s", root=root).stdout.strip()
    (root / "a.txt").write_text("2\n")
    assert cli.run("snapshot", "-s", "s", root=root).returncode == 0
    (root / "a.txt").write_text("3\n")
    merged = cli.run("revert", point, "--yes", "--merge", root=root)
    assert merged.returncode == 3, merged.stderr
    assert "<<<<<<<" in (root / "a.txt").read_text()


def test_a_sub_folders_tree_id_is_no_snapshot_of_the_root(tree_factory, cli: Cli):
    """Every folder of a snapshot is a tree in the store: its full id is refused as what it is
    (exit 2 naming it) by every command that takes an id, and the files stay."""
    from undostore import Workspace

    root = tree_factory({"a.txt": "a\n", "src": {"m.py": "m\n"}})
    point = cli.run("snapshot", "-s", "s", root=root).stdout.strip()
    with Workspace(root) as ws:
        (sub,) = [sha.hex() for _mode, name, sha in ws.store.read_tree(bytes.fromhex(point))
                  if name == b"src"]
    before = files(root)
    for args in (("restore", sub, "--yes"), ("diff", sub), ("diff", point, sub),
                 ("revert", sub, point, "--yes"), ("undo", "--to", sub, "-s", "s", "--yes")):
        refused = cli.run(*args, root=root)
        assert refused.returncode == 2, (args, refused.stderr)
        assert f"{sub} is not a snapshot of" in refused.stderr, args
    assert files(root) == before
    assert cli.run("diff", point, root=root).returncode == 0


def test_a_crashed_undo_finished_by_the_hook_is_said(tree_factory, tmp_path):
    """An undo killed half-way is finished by the next hook: the `/undo` answer and the hook's
    stderr say so (it moves files: never silently)."""
    import os

    import pytest

    from .crash_support import run_until_stall, spawn

    if os.name == "nt":
        pytest.skip("kills a child mid-restore (POSIX timing)")
    root = tree_factory({"a.txt": "0\n", "b.txt": "0\n"})
    turn(root, "s", "one", {"a.txt": "1\n", "b.txt": "1\n", "c.txt": "1\n"})
    turn(root, "s", "two", {"d.txt": "2\n"})
    assert run_until_stall(spawn("undo", str(root), stall_at=1, marker=str(tmp_path / "m")),
                           str(tmp_path / "m"), timeout=60)
    told = answer(hook(prompt_event(root, "/undo", session="s")))
    assert told.startswith("undostore: finished an interrupted restore to "), told
    assert files(root) == {"a.txt": "0\n", "b.txt": "0\n"}   # "two", then "one", taken back
    from undostore import Workspace

    with Workspace(root) as ws:
        assert [p.label for p in ws.log("s").redo] == ["one", "two"]   # each moved once
