"""`status` (the footer line) and undo points that mean something: an identical point is not
recorded, and undo passes over points equal to the files now."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from undostore import Workspace
from undostore.restore.restorelog import RestoreJournal, remove_journal, write_journal


def test_status_line_and_json_keys(tree_factory, cli):
    root = tree_factory({"a.txt": "0"})
    with Workspace(root) as ws:
        for text in ("1", "2", "3"):
            (root / "a.txt").write_text(text)
            ws.snapshot(session="s")
        (root / "a.txt").write_text("4")
        ws.undo("s")
    result = cli.run("status", "--session", "s", cwd=root)
    assert (result.returncode, result.stdout, result.stderr) == (0, "undo:2 redo:1\n", "")
    doc = json.loads(cli.run("status", "--session", "s", "--json", cwd=root).stdout)
    assert set(doc) == {"session", "undo", "redo", "restoring", "pending",
                        "last_point_age_seconds", "no_hook", "over_max_files"}
    assert (doc["session"], doc["undo"], doc["redo"], doc["pending"]) == ("s", 2, 1, None)
    assert 0 <= doc["last_point_age_seconds"] < 60


def test_status_says_recovery_required_while_a_restore_is_pending(tree_factory, cli):
    root = tree_factory({"a.txt": "0"})
    with Workspace(root) as ws:
        snap = ws.snapshot(session="s").id
        journal = RestoreJournal("restore", "00ff", snap, snap, snap, modify=["a.txt"])
        write_journal(ws.store, journal)
        try:
            assert cli.run("status", cwd=root).stdout == "undo:1 redo:0 recovery_required\n"
            pending = json.loads(cli.run("status", "--json", cwd=root).stdout)["pending"]
            assert (pending["operation"], pending["target"]) == ("restore", snap)
        finally:
            remove_journal(ws.store)
    assert cli.run("status", cwd=root).stdout == "undo:1 redo:0\n"


def test_status_never_creates_a_store(tmp_path, cli):
    folder = tmp_path / "never"
    folder.mkdir()
    result = cli.run("status", "--json", cwd=folder)
    assert result.returncode == 0
    assert json.loads(result.stdout) == {"session": "default", "undo": 0, "redo": 0,
                                         "restoring": False, "pending": None,
                                         "last_point_age_seconds": None, "no_hook": False,
                                         "over_max_files": None}
    assert not (Path(os.environ["UNDOSTORE_HOME"]) / "stores").exists()


def test_status_says_no_hook_until_the_hosts_conversation_reached_the_hook(tree_factory, cli):
    """A host's footer (its statusLine JSON names the conversation) says ` no-hook` while that
    conversation never reached undostore's hook here: a host that does not call it (not wired,
    not trusted) is never silent. Once a prompt went through the hook, it is gone."""
    root = tree_factory({"a.txt": "0"})
    line = {"session_id": "conv-1", "cwd": str(root), "workspace": {"current_dir": str(root)}}
    before = cli.run("status", cwd=root, input=json.dumps(line))
    assert before.stdout == "undo:0 redo:0 no-hook\n", before.stderr
    with Workspace(root) as ws:
        ws.snapshot(session="other")             # another conversation's point: still no-hook
    assert cli.run("status", cwd=root, input=json.dumps(line)).stdout.endswith(" no-hook\n")
    event = {"session_id": "conv-1", "cwd": str(root), "hook_event_name": "UserPromptSubmit",
             "prompt": "go", "prompt_id": "p1"}
    assert cli.run("hook", cwd=root, input=json.dumps(event)).returncode == 0
    after = cli.run("status", "--json", cwd=root, input=json.dumps(line))
    doc = json.loads(after.stdout)
    assert (doc["session"], doc["undo"], doc["no_hook"]) == ("conv-1", 1, False)
    assert cli.run("status", "--session", "conv-2", cwd=root).stdout == "undo:0 redo:0\n"


def test_status_imports_no_snapshot_restore_or_dulwich_machinery(tree_factory):
    """It runs on every prompt render: only the journals are read."""
    root = tree_factory({"a.txt": "0"})
    with Workspace(root) as ws:
        ws.snapshot(session="s")
    script = ("import sys\nfrom undostore_cli.main import main\n"
              "try:\n    main(['status'])\nexcept SystemExit:\n    pass\n"
              "heavy = [m for m in sys.modules if m.startswith(('dulwich', "
              "'undostore.snapshot', 'undostore.restore.restore', 'undostore.diff'))]\n"
              "print(heavy, file=sys.stderr)\n")
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                            cwd=root, timeout=60)
    assert result.stdout == "undo:1 redo:0\n"
    assert result.stderr.strip().splitlines()[-1] == "[]"


def test_a_point_equal_to_the_newest_records_nothing(tree_factory, cli):
    root = tree_factory({"a.txt": "0"})
    first = json.loads(cli.run("snapshot", "-s", "s", "--label", "one", "--json", cwd=root).stdout)
    same = json.loads(cli.run("snapshot", "-s", "s", "--label", "two", "--json", cwd=root).stdout)
    assert (first["recorded"], same["recorded"]) == (True, False)
    assert first["id"] == same["id"]
    plain = cli.run("snapshot", "-s", "s", cwd=root)
    assert "no new undo point" in plain.stderr
    with Workspace(root) as ws:
        # The turn of "one" changed nothing: the newest prompt ("two") takes it over; a point
        # with no label leaves it as it is.
        assert [p.label for p in ws.log("s").undo] == ["two"]
    assert json.loads(cli.run("snapshot", "--json", cwd=root).stdout)["recorded"] is False


def test_undo_passes_over_points_equal_to_the_files_now(tree_factory):
    root = tree_factory({"a.txt": "A"})
    with Workspace(root) as ws:
        ws.snapshot(session="s", label="turn 1")
        (root / "a.txt").write_text("B")
        ws.snapshot(session="s", label="turn 2")   # nothing changes during turn 2
        result = ws.undo("s")
        assert result.changed and (root / "a.txt").read_text() == "A"
        log = ws.log("s")
        assert log.undo == [] and [p.label for p in log.redo] == ["turn 1"]
        ws.redo("s")
        assert (root / "a.txt").read_text() == "B"


def test_undo_when_every_point_equals_the_files_says_so(tree_factory, cli):
    root = tree_factory({"a.txt": "A"})
    with Workspace(root) as ws:
        ws.snapshot(session="s")
    result = cli.run("undo", "--yes", cwd=root)
    assert result.returncode == 2
    assert "its turns changed no file" in result.stderr
    with Workspace(root) as ws:
        assert len(ws.log("s").undo) == 1, "nothing consumed"


def test_two_prompts_with_no_change_between_then_one_undo_changes_files(tree_factory, cli):
    root = tree_factory({"a.txt": "before"})
    for prompt in ("first", "second (nothing changed since first)"):
        event = {"session_id": "cc", "cwd": str(root), "hook_event_name": "UserPromptSubmit",
                 "prompt": prompt}
        assert cli.run("hook", cwd=root, input=json.dumps(event)).returncode == 0
    (root / "a.txt").write_text("after")
    assert cli.run("undo", "--yes", cwd=root).returncode == 0
    assert (root / "a.txt").read_text() == "before"
