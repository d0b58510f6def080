"""One host event, performed once (issue 46): Codex runs a project's hooks and the user-wide ones
at the same time, so one `/undo` arrives twice; a host may retry a hook too. Real `undostore
hook` processes started together with one event undo one turn, and both answer the same line.
The event is known by what the host sends: Codex's `turn_id`, Claude Code's `prompt_id`, ...;
a host that sends no id (the OpenCode plugin) by its session and prompt arriving within a
moment of each other, so a `/undo` typed again later is done again."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from undostore import Workspace


def _start(event: dict, host: str) -> subprocess.Popen:
    proc = subprocess.Popen([sys.executable, "-m", "undostore", "hook", "--host", host],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    proc.stdin.write(json.dumps(event).encode())
    proc.stdin.close()
    return proc


def _finish(proc: subprocess.Popen) -> tuple[int, str, str]:
    out, err = proc.stdout.read().decode(), proc.stderr.read().decode()
    code = proc.wait(timeout=60)
    proc.stdout.close()
    proc.stderr.close()
    return code, out, err


def _hook(event: dict, host: str) -> tuple[int, str, str]:
    return _finish(_start(event, host))


def _event(host: str, root: Path, prompt: str, n: int) -> dict:
    base = {"session_id": "conv", "cwd": str(root), "prompt": prompt}
    if host == "codex":
        return {**base, "hook_event_name": "UserPromptSubmit", "turn_id": f"turn-{n}",
                "model": "m", "permission_mode": "default", "transcript_path": None}
    if host == "claude-code":
        return {**base, "hook_event_name": "UserPromptSubmit", "prompt_id": f"prompt-{n}",
                "transcript_path": str(root / "t.jsonl")}
    return {**base, "hook_event_name": "chat.message"}   # opencode: no id


def _three_turns(root: Path, host: str) -> None:
    for n in range(1, 4):
        code, _, err = _hook(_event(host, root, f"turn {n}", n), host)
        assert code == 0, err
        (root / "a.txt").write_text(f"{n}\n")


@pytest.mark.parametrize("host", ["codex", "claude-code", "opencode"])
def test_one_undo_delivered_twice_at_once_takes_back_one_turn(tree_factory, host):
    root = tree_factory({"a.txt": "0\n"})
    _three_turns(root, host)
    undo = _event(host, root, "/undo", 4)
    first, second = _start(undo, host), _start(undo, host)
    answers = [_finish(first), _finish(second)]
    assert (root / "a.txt").read_text() == "2\n", answers
    assert answers[0] == answers[1], answers
    code, out, err = answers[0]
    assert code == 0
    assert "undid the last turn of session 'conv' ('turn 3'; 1 turn; 1 file)" in out + err, \
        answers
    with Workspace(root) as ws:
        log = ws.log("conv")
        assert [p.label for p in log.undo] == ["turn 2", "turn 1"]   # newest first
        assert [p.label for p in log.redo] == ["turn 3"]


@pytest.mark.parametrize("host", ["codex", "claude-code"])
def test_a_second_undo_with_its_own_id_is_done_again(tree_factory, host):
    root = tree_factory({"a.txt": "0\n"})
    _three_turns(root, host)
    for n, expected in ((4, "2\n"), (5, "1\n")):
        code, _, err = _hook(_event(host, root, "/undo", n), host)
        assert code == 0, err
        assert (root / "a.txt").read_text() == expected


def test_a_host_without_ids_does_the_same_undo_again_a_moment_later(tree_factory):
    from undostore_cli.hosts.once import SAME_EVENT_SECONDS

    root = tree_factory({"a.txt": "0\n"})
    _three_turns(root, "opencode")
    for expected in ("2\n", "1\n"):
        code, _, err = _hook(_event("opencode", root, "/undo", 0), "opencode")
        assert code == 0, err
        assert (root / "a.txt").read_text() == expected
        time.sleep(SAME_EVENT_SECONDS + 0.1)


def test_a_late_end_of_an_earlier_turn_records_nothing(tree_factory):
    """Pi's print mode may exit before its after-turn hook finished, and the next prompt's hook
    can come first: the end names its turn (`turn_id`), so the earlier turn's late end leaves
    the newer turn open for its own end, which records the files after it."""
    root = tree_factory({"a.txt": "0\n"})
    base = {"session_id": "conv", "cwd": str(root)}
    for event in ({**base, "hook_event_name": "before_agent_start", "prompt": "one",
                   "turn_id": "t1"},
                  {**base, "hook_event_name": "before_agent_start", "prompt": "two",
                   "turn_id": "t2"}):
        code, _, err = _hook(event, "pi")
        assert code == 0, err
    (root / "a.txt").write_text("2\n")
    code, _, err = _hook({**base, "hook_event_name": "agent_end", "turn_id": "t1"}, "pi")
    assert code == 0, err
    with Workspace(root) as ws:
        newest = ws.log("conv").undo[0]
        assert (newest.label, newest.after, newest.meta["event_id"]) == ("two", None, "t2")
    (root / "a.txt").write_text("3\n")
    code, _, err = _hook({**base, "hook_event_name": "agent_end", "turn_id": "t2"}, "pi")
    assert code == 0, err
    with Workspace(root) as ws:
        assert ws.log("conv").undo[0].after == ws.snapshot().id
