"""Odd text from a host is taken as it comes (issue 55, items 6 and 8): half an emoji (a lone
surrogate, which JavaScript's `slice` makes) in a prompt, a session id or an event id, and a
session id longer than a session name may be. Through real hook, status and CLI processes."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from undostore import Workspace

from .conftest import Cli
from .test_hook import hook
from .test_undo_per_conversation import answer, prompt_event, stop_event

HALF_AN_EMOJI = "\ud83d"   # the first half of 😀 (U+1F600)


def footer(root: Path, session: str) -> dict:
    line = {"session_id": session, "cwd": str(root), "workspace": {"current_dir": str(root)}}
    done = subprocess.run([sys.executable, "-m", "undostore", "status", "--json"],
                          input=json.dumps(line).encode(), capture_output=True, cwd=root,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_half_an_emoji_in_a_prompt_and_its_ids_is_recorded_and_shown(tree_factory, cli: Cli):
    root = tree_factory({"a.txt": "1"})
    session = f"conv-{HALF_AN_EMOJI}"
    event = prompt_event(root, f"fix the {HALF_AN_EMOJI} bug", session=session)
    event["prompt_id"] = f"id-{HALF_AN_EMOJI}"
    done = hook(event)
    assert (done.returncode, done.stderr) == (0, b""), done.stderr
    (root / "a.txt").write_text("2")
    assert hook(stop_event(root, session)).returncode == 0
    assert footer(root, session)["undo"] == 1
    with Workspace(root) as ws:   # (a Windows pipe's text would not carry U+FFFD as it is)
        (info,) = ws.sessions()
    assert info.name.startswith("conv-\ufffd~")
    # the session last acted on: that one; bytes, as JSON is UTF-8 whatever the locale says
    logged = cli.run("log", "--json", root=root, text=False)
    assert logged.returncode == 0, logged.stderr
    assert [p["label"] for p in json.loads(logged.stdout)["undo"]] == ["fix the \ufffd bug"]
    assert "undid" in answer(hook(prompt_event(root, "/undo", session=session)))
    assert (root / "a.txt").read_text() == "1"


def test_a_session_id_longer_than_a_name_is_one_session_of_its_own(tree_factory):
    root = tree_factory({"a.txt": "1"})
    first, second = "x" * 150 + "-first", "x" * 150 + "-second"
    for n, session in enumerate((first, second, first)):
        (root / "a.txt").write_text(f"turn {n}")
        done = hook(prompt_event(root, f"turn {n}", session=session))
        assert (done.returncode, done.stderr) == (0, b""), done.stderr
    with Workspace(root) as ws:
        sessions = sorted((s.name, s.undo) for s in ws.sessions())
    assert sorted(count for _, count in sessions) == [1, 2]
    assert all(len(name) <= 100 for name, _ in sessions)
    assert footer(root, first)["undo"] == 2 and footer(root, second)["undo"] == 1


def test_a_slash_undo_it_cannot_read_is_answered_with_the_usage_not_sent_on(tree_factory):
    """Issue 55, item 12: `/undo foo` reached the model (whose undo.md then said the hook had
    not run). A prompt that starts with the word /undo or /redo is always the user's command."""
    root = tree_factory({"a.txt": "1"})
    turn_files = {"a.txt": "2"}
    from .test_undo_per_conversation import turn

    turn(root, "c", "edit a", turn_files)
    usage = ("/undo [N | turn K] [call N] [--merge | --whole | --keep] [PATH...] or /redo [N] "
             "[--merge | --keep] [PATH...]")
    for typed in ("/undostore:undo --hard", "/UNDO\nthen go on", '/undo "a.txt'):
        told = answer(hook(prompt_event(root, typed, session="c")))
        assert told.startswith(f"undostore: nothing done: {usage}"), told
    # A word after the command is a path (issue 59): one the turns never changed is refused,
    # with the usage named.
    for typed in ("/undo foo", "/redo 2 please"):
        told = answer(hook(prompt_event(root, typed, session="c")))
        assert told.endswith(f"; nothing done ({usage})"), told
        assert "changed none of foo" in told or "nothing to redo" in told, told
    assert (root / "a.txt").read_text() == "2"   # nothing was undone
    for ordinary in ("/undone is a word", "please /undo that"):
        done = hook(prompt_event(root, ordinary, session="c"))
        assert done.returncode == 0 and b"decision" not in done.stdout


def test_the_models_note_says_the_net_result_of_the_steps_since_its_last_prompt(tree_factory):
    """Issue 55, item 13: seven alternating /undo and /redo made seven lines for the model.
    Eleven here: more steps than any fixed number of kept lines, the net result still right."""
    from .test_undo_per_conversation import turn

    root = tree_factory({"a.txt": "1", "b.txt": "1"})
    turn(root, "c", "edit a", {"a.txt": "2"})
    turn(root, "c", "edit b", {"b.txt": "2"})
    for typed in ("/undo", "/redo") * 5 + ("/undo",):
        answer(hook(prompt_event(root, typed, session="c")))
    done = hook(prompt_event(root, "go on", session="c"))
    note = json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"]
    assert note.count("the user") == 1, note
    assert "took back the turn 'edit b'" in note and "b.txt" in note and "a.txt" not in note
    for typed in ("/undo", "/redo"):   # net nothing: the files are as the model left them
        answer(hook(prompt_event(root, typed, session="c")))
    done = hook(prompt_event(root, "and again", session="c"))
    assert done.returncode == 0 and done.stdout == b"", done.stdout


@pytest.mark.skipif(shutil.which("strace") is None, reason="strace counts the opens")
def test_one_hook_undo_reads_the_session_journal_once(tree_factory, tmp_path):
    """Issue 56: a step is one transaction; one `/undo` read its session's journal six times."""
    from undostore.history.journal import encode_name

    from .test_undo_per_conversation import turn

    root = tree_factory({"a.txt": "1"})
    turn(root, "conv", "edit a", {"a.txt": "2"})
    trace = tmp_path / "opens.txt"
    event = json.dumps(prompt_event(root, "/undo", session="conv")).encode()
    done = subprocess.run(["strace", "-f", "-e", "trace=openat", "-o", str(trace),
                           sys.executable, "-m", "undostore", "hook"], input=event,
                          capture_output=True, cwd=root, timeout=120)
    assert done.returncode == 0 and b"undid" in done.stdout, done.stderr
    name = encode_name("conv") + ".journal"
    reads = [line for line in trace.read_text().splitlines()
             if f'/{name}"' in line and "O_RDONLY" in line and "ENOENT" not in line]
    assert len(reads) == 1, reads
    assert (root / "a.txt").read_text() == "1"
