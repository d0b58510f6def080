"""`log --all` (issue 59): every conversation's turns in one timeline, newest first, with each
turn's tool calls and files, and `--graph`'s lanes; through the real command."""

from __future__ import annotations

import json
import time
from pathlib import Path

from undostore import ToolCall, Workspace
from undostore.history.toolcall import FILE, SHELL

from .conftest import Cli


def _two_conversations(root: Path) -> None:
    """alpha edits a.txt (a file tool), beta runs a shell that writes b.txt, alpha's second
    turn deletes c.txt with a shell; each turn a moment after the one before."""
    turns = [("alpha", "edit a", ToolCall("e1", "Edit", FILE, ("a.txt",)),
              lambda: (root / "a.txt").write_text("a1\n")),
             ("beta", "build", ToolCall("s1", "Bash", SHELL, (), "make b"),
              lambda: (root / "b.txt").write_text("b1\n")),
             ("alpha", "drop c", ToolCall("s2", "Bash", SHELL, (), "rm c.txt"),
              lambda: (root / "c.txt").unlink())]
    with Workspace(root) as ws:
        for session, label, call, work in turns:
            ws.snapshot(session=session, label=label)
            ws.call_started(call, session)
            work()
            ws.call_finished(call.call_id, session)
            ws.end_turn(session)
            time.sleep(0.01)


def test_log_all_shows_every_conversations_turns_newest_first_with_calls_and_files(
        tree_factory):
    root = tree_factory({"a.txt": "a0\n", "b.txt": "b0\n", "c.txt": "c0\n"})
    _two_conversations(root)
    cli = Cli()
    done = cli.run("log", "--all", cwd=root)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    heads = [line.split()[0:2] + [line.split()[-1]] for line in lines if not line[0].isspace()]
    assert "    1. Bash: rm c.txt  (c.txt)" in done.stdout
    assert heads == [["alpha", "1", "c"], ["beta", "1", "build"], ["alpha", "2", "a"]]
    text = done.stdout
    assert "    D  c.txt" in text and "    1. Bash: make b  (b.txt)" in text
    assert "    1. Edit  (a.txt)" in text
    doc = json.loads(cli.run("log", "--all", "--json", cwd=root).stdout)
    assert [(t["session"], t["number"], [c["path"] for c in t["changes"]])
            for t in doc["turns"]] == [("alpha", 1, ["c.txt"]), ("beta", 1, ["b.txt"]),
                                       ("alpha", 2, ["a.txt"])]
    assert doc["turns"][1]["calls"][0]["tool"] == "Bash"
    graph = cli.run("log", "--all", "--graph", "--no-pager", cwd=root).stdout.splitlines()
    assert graph[0].startswith("o   alpha") or graph[0].startswith("o alpha"), graph
    rows = [line for line in graph if "  " in line and line.lstrip("o| ").startswith(
        ("alpha", "beta"))]
    assert [row[:4] for row in rows] == ["o   ", "| o ", "o   "], graph
    assert cli.run("log", "--all", "-s", "alpha", cwd=root).returncode == 2
    assert cli.run("log", "--graph", cwd=root).returncode == 2
    assert json.loads(cli.run("log", "--all", "-n", "1", "--json", cwd=root).stdout)[
        "turns"][0]["session"] == "alpha"
