"""`undostore restore` as a real process: output, the question, --yes, --abort, exit codes."""

from __future__ import annotations

import json
import os
import subprocess

import pytest

from undostore import ConflictError, Workspace

from .conftest import IS_WINDOWS
from .restore_support import craft_snapshot, disk_state


@pytest.fixture
def changed_root(tree_factory):
    """(root, snapshot id) with the files changed since that snapshot."""
    root = tree_factory({"a": "1", "d": {"b": "2"}})
    snap = Workspace(root).snapshot().id
    (root / "a").write_text("changed")
    (root / "z").write_text("new")
    return root, snap


def test_without_terminal_and_without_yes_refuses_with_exit_2(changed_root, cli):
    root, snap = changed_root
    before = disk_state(root)
    done = cli.run("restore", snap, root=root)
    assert done.returncode == 2, done.stderr
    assert "--yes" in done.stderr
    assert done.stdout == ""
    assert disk_state(root) == before


def test_yes_with_json_prints_one_object_with_the_contract_keys(changed_root, cli):
    root, snap = changed_root
    done = cli.run("restore", snap[:8], "--yes", "--json", root=root)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert {"target", "safety", "created", "modified", "deleted"} <= result.keys()
    assert result["target"] == snap
    assert (result["created"], result["modified"], result["deleted"]) == ([], ["a"], ["z"])
    assert (root / "a").read_text() == "1" and not (root / "z").exists()
    # The safety snapshot takes it back.
    back = cli.run("restore", result["safety"], "--yes", root=root)
    assert back.returncode == 0, back.stderr
    assert (root / "a").read_text() == "changed" and (root / "z").read_text() == "new"
    assert result["safety"] in back.stdout


def test_dry_run_lists_the_plan_and_changes_nothing(changed_root, cli):
    root, snap = changed_root
    before = disk_state(root)
    done = cli.run("restore", snap, "--dry-run", root=root)
    assert done.returncode == 0, done.stderr
    assert "M\ta" in done.stdout and "D\tz" in done.stdout
    assert disk_state(root) == before


def test_unknown_id_and_missing_id_are_usage_errors(changed_root, cli):
    root, _ = changed_root
    assert cli.run("restore", "0123abcd", "--yes", root=root).returncode == 2
    assert cli.run("restore", "--yes", root=root).returncode == 2
    assert cli.run("restore", "0123abcd", "--abort", root=root).returncode == 2


def test_refusals_exit_3_and_change_nothing(tree_factory, cli):
    root = tree_factory({".gitignore": "*.log\n", "a": "1", "x.log": "precious"})
    ws = Workspace(root)
    ws.snapshot()
    in_the_way = craft_snapshot(ws.store, {"a": b"1", "x.log": b"other"})
    incomplete = craft_snapshot(ws.store, {"a": b"1", "gone": ("missing", b"lost")})
    unsafe = craft_snapshot(ws.store, {"a": b"1", ".git": {"config": b"x"}})
    before = disk_state(root)
    for snap, words in ((in_the_way, "x.log"), (incomplete, "gone"), (unsafe, ".git")):
        done = cli.run("restore", snap, "--yes", root=root)
        assert done.returncode == 3, done.stderr
        assert words in done.stderr
        assert disk_state(root) == before


def test_interrupted_restore_blocks_commands_until_aborted(changed_root, cli):
    root, snap = changed_root

    def edit_after_safety_snapshot(plan):
        (root / "a").write_text("edited by someone during the restore")
        return True

    with pytest.raises(ConflictError):
        Workspace(root).restore(snap, confirm=edit_after_safety_snapshot)
    blocked = cli.run("snapshot", root=root)
    assert blocked.returncode == 3
    assert "undostore restore --abort" in blocked.stderr
    done = cli.run("restore", "--abort", "--json", root=root)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["operation"] == "abort"
    assert [w["path"] for w in result["warnings"]] == ["a"]
    assert (root / "a").read_text() == "edited by someone during the restore"
    again = cli.run("restore", "--abort", root=root)
    assert again.returncode == 0 and "no interrupted restore" in again.stdout
    assert cli.run("snapshot", root=root).returncode == 0


def test_help_names_the_options(cli):
    done = cli.run("restore", "--help")
    assert done.returncode == 0
    for option in ("--dry-run", "--yes", "--abort", "--json"):
        assert option in done.stdout


@pytest.mark.skipif(IS_WINDOWS, reason="a pseudo-terminal is POSIX")
@pytest.mark.parametrize("answer", ["y\n", "n\n", "\x04"], ids=["yes", "no", "end-of-input"])
def test_question_on_a_terminal(changed_root, answer, cli):
    import pty

    root, snap = changed_root
    before = disk_state(root)
    leader, follower = pty.openpty()
    try:
        proc = cli.popen("restore", snap, root=root, stdin=follower, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
        os.write(leader, answer.encode())
        out, err = proc.communicate(timeout=60)
    finally:
        os.close(leader)
        os.close(follower)
    assert "M\ta" in err and "Restore now?" in err
    if answer == "y\n":
        assert proc.returncode == 0, err
        assert (root / "a").read_text() == "1"
        assert "safety snapshot" in out
    else:
        assert proc.returncode == 2
        assert disk_state(root) == before
        assert ("--yes" in err) == (answer == "\x04")



@pytest.mark.parametrize("as_json", [False, True], ids=["text", "json"])
def test_undo_redo_and_restore_report_their_warnings_and_succeed(tree_factory, cli, as_json):
    """A folder the target has not, kept because it holds an ignored file, is a warning of
    each command that restores (it crashed undo and redo once): exit 0, the warning on stderr
    naming the folder, and in the JSON with its kind."""
    root = tree_factory({".gitignore": "*.log\n", "a": "1", "d": {"t": "t"}})

    def restoring(*args: str) -> None:
        done = cli.run(*args, "--yes", *(["--json"] if as_json else []), root=root)
        assert done.returncode == 0, done.stderr
        assert "warning: d: folder kept" in done.stderr
        if as_json:
            assert [(w["path"], w["kind"]) for w in json.loads(done.stdout)["warnings"]] == [
                ("d", "folder_kept")]

    def snapshot(*args: str) -> str:
        done = cli.run("snapshot", "--json", *args, root=root)
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)["id"]

    snapshot("--session", "s", "--label", "the turn")
    (root / "d" / "t").unlink()
    (root / "d").rmdir()                               # the turn: rm -r d
    assert cli.run("undo", "--session", "s", "--yes", root=root).returncode == 0
    (root / "d" / "x.log").write_text("a build's log")
    restoring("redo", "--session", "s")                # d goes again, but for its log
    assert sorted(os.listdir(root / "d")) == ["x.log"]
    without_t = snapshot()
    (root / "d" / "t").write_text("t")
    restoring("restore", without_t)
    snapshot("--session", "s", "--label", "adds d/t")
    (root / "d" / "t").write_text("t")
    restoring("undo", "--session", "s")
    assert sorted(os.listdir(root / "d")) == ["x.log"]
