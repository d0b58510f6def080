"""`undostore hook` for every host, with each host's own event shapes (from its published schema,
see cli/hosts.py), through real `undostore hook` processes: a turn (prompt, edit, after-turn),
then `/undo` and `/redo` typed in the host, answered the way that host stops a prompt.
"""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from undostore import Workspace

from .conftest import Cli

SESSION = "3f2a-sess"


def run_hook(args: list[str], stdin: bytes, cwd: Path) -> subprocess.CompletedProcess[bytes]:
    return Cli().run("hook", *args, input=stdin, cwd=cwd, text=False)


@dataclass(frozen=True)
class Shape:
    """How one host sends its prompt and after-turn events, and reads the answers."""

    host: str
    prompt: Callable[..., dict]
    after: Callable[..., dict]
    prompt_args: tuple[str, ...] = ()
    after_args: tuple[str, ...] = ()
    quiet_prompt: str = ""        # stdout on a recorded prompt
    quiet_after: str = ""         # stdout on the after-turn event
    block: str = "decision"       # how the /undo answer comes back


_EVENTS = itertools.count(1)


def _fresh(prefix: str) -> str:
    """A new event id, as each host gives each event its own (turn_id, generation_id, ...)."""
    return f"{prefix}{next(_EVENTS)}"


def _claude(event: str) -> Callable[..., dict]:
    def make(root: Path, prompt: str | None = None) -> dict:
        body = {"session_id": SESSION, "transcript_path": str(root / "t.jsonl"),
                "cwd": str(root), "hook_event_name": event, "permission_mode": "default"}
        if prompt is not None:
            return {**body, "prompt": prompt}
        return {**body, "stop_hook_active": False}
    return make


def _codex(event: str) -> Callable[..., dict]:
    def make(root: Path, prompt: str | None = None) -> dict:
        body = {"session_id": SESSION, "turn_id": _fresh("t-"), "transcript_path": None,
                "cwd": str(root), "hook_event_name": event, "model": "gpt-5",
                "permission_mode": "default"}
        if prompt is not None:
            return {**body, "prompt": prompt}
        return {**body, "stop_hook_active": False, "last_assistant_message": "done"}
    return make


def _cursor(event: str) -> Callable[..., dict]:
    def make(root: Path, prompt: str | None = None) -> dict:
        body = {"conversation_id": SESSION, "generation_id": _fresh("g-"), "hook_event_name": event,
                "workspace_roots": [str(root)], "model": "gpt-5", "cursor_version": "1.7.2",
                "user_email": None}
        if prompt is not None:
            return {**body, "prompt": prompt, "attachments": []}
        return {**body, "status": "completed", "loop_count": 0}
    return make


def _gemini(event: str) -> Callable[..., dict]:
    def make(root: Path, prompt: str | None = None) -> dict:
        body = {"session_id": SESSION, "transcript_path": str(root / "t.json"), "cwd": str(root),
                "hook_event_name": event, "timestamp": f"2026-12-01T22:00:{_fresh('')}.000Z"}
        if prompt is not None:
            return {**body, "prompt": prompt}
        return {**body, "prompt": "p", "prompt_response": "done", "stop_hook_active": False}
    return make


def _copilot(root: Path, prompt: str | None = None) -> dict:
    body = {"sessionId": SESSION, "timestamp": 1764626400000 + int(_fresh("")), "cwd": str(root)}
    if prompt is not None:
        return {**body, "prompt": prompt}
    return {**body, "transcriptPath": str(root / "t.jsonl"), "stopReason": "end_turn"}


def _windsurf(event: str) -> Callable[..., dict]:
    def make(root: Path, prompt: str | None = None) -> dict:
        body = {"agent_action_name": event, "trajectory_id": SESSION, "execution_id": _fresh("e-"),
                "timestamp": "2026-12-01T22:00:00Z"}
        if prompt is not None:
            return {**body, "tool_info": {"user_prompt": prompt}}
        return {**body, "tool_info": {"response": "done"}}
    return make


SHAPES = [
    Shape("claude-code", _claude("UserPromptSubmit"), _claude("Stop")),
    Shape("codex", _codex("UserPromptSubmit"), _codex("Stop")),
    Shape("cursor", _cursor("beforeSubmitPrompt"), _cursor("stop"),
          quiet_prompt='{"continue": true}', quiet_after="{}", block="continue"),
    Shape("gemini", _gemini("BeforeAgent"), _gemini("AfterAgent")),
    Shape("copilot", _copilot, _copilot, prompt_args=("userPromptSubmitted",),
          after_args=("agentStop",), block="handled"),
    Shape("windsurf", _windsurf("pre_user_prompt"), _windsurf("post_cascade_response"),
          block="exit-2"),
]


def files(root: Path) -> dict[str, str]:
    return {p.relative_to(root).as_posix(): p.read_text() for p in sorted(root.rglob("*"))
            if p.is_file()}


def send(shape: Shape, root: Path, event: dict, args: tuple[str, ...], detect: bool = False
         ) -> subprocess.CompletedProcess[bytes]:
    host = [] if detect else ["--host", shape.host]
    # Windsurf sends no folder: its hooks run in the workspace root, as here.
    return run_hook([*host, *args], json.dumps(event).encode(), cwd=root)


def assert_quiet(result: subprocess.CompletedProcess[bytes], expected: str) -> None:
    assert result.returncode == 0, result.stderr
    assert result.stdout.decode().strip() == expected
    if expected:
        json.loads(result.stdout)  # one JSON object, nothing else


def undo_answer(shape: Shape, result: subprocess.CompletedProcess[bytes]) -> str:
    """The one line the host shows for a /undo, checked to be in that host's form."""
    out = result.stdout.decode()
    if shape.block == "exit-2":
        assert result.returncode == 2 and out == "", result.stderr
        return result.stderr.decode().strip()
    assert result.returncode == 0, result.stderr
    answer = json.loads(out)
    if shape.block == "handled":   # Copilot shows it as the reply; the model gets nothing
        assert answer["handled"] is True
        return answer["responseContent"]
    if shape.block == "continue":
        assert answer["continue"] is False
        return answer["user_message"]
    assert set(answer) == {"decision", "reason"} and answer["decision"] == "block"
    return answer["reason"]


@pytest.mark.parametrize("detect", [False, True], ids=["named", "detected"])
@pytest.mark.parametrize("shape", SHAPES, ids=[s.host for s in SHAPES])
def test_a_turn_then_undo_and_redo_typed_in_the_host(tree_factory, shape, detect):
    root = tree_factory({"a.txt": "before", "keep.txt": "k"})
    before = files(root)
    args = () if detect else shape.prompt_args
    assert_quiet(send(shape, root, shape.prompt(root, "Refactor the parser\nthen tests"), args,
                      detect), shape.quiet_prompt)
    (root / "a.txt").write_text("after the turn")
    (root / "new.txt").write_text("made by the turn")
    after = files(root)
    done_args = () if detect else shape.after_args
    assert_quiet(send(shape, root, shape.after(root), done_args, detect), shape.quiet_after)
    with Workspace(root) as ws:
        [point] = ws.log(SESSION).undo
        assert point.label == "Refactor the parser"
        assert point.after == ws.snapshot().id

    line = undo_answer(shape, send(shape, root, shape.prompt(root, "/undo"), args, detect))
    assert "undid the last turn" in line and "'Refactor the parser'" in line, line
    assert files(root) == before
    line = undo_answer(shape, send(shape, root, shape.prompt(root, " /undostore:redo "), args,
                                   detect))
    assert "redid" in line, line
    assert files(root) == after
    with Workspace(root) as ws:  # the commands recorded no point
        assert [p.label for p in ws.log(SESSION).undo] == ["Refactor the parser"]


@pytest.mark.parametrize("folder", ["d", pytest.param("d\nINJECTED", marks=pytest.mark.skipif(
    sys.platform == "win32", reason="no newline in Windows names"))], ids=["plain", "newline"])
def test_a_host_undo_names_the_restores_warnings(tree_factory, folder):
    """The one line the host shows says what the undo could not do (here: a folder kept for
    an ignored build log), as the CLI's stderr does; still one line whatever the name."""
    shape = SHAPES[0]
    root = tree_factory({".gitignore": "*.log\n", "a.txt": "a"})
    send(shape, root, shape.prompt(root, "Add a folder"), shape.prompt_args, False)
    (root / folder).mkdir()
    (root / folder / "t").write_text("made by the turn")
    (root / folder / "run.log").write_text("a build's log")
    send(shape, root, shape.after(root), shape.after_args, False)
    line = undo_answer(shape, send(shape, root, shape.prompt(root, "/undo"), shape.prompt_args,
                                   False))
    assert "undid the last turn" in line, line
    assert f"1 warning(s), the first: {folder!r}: folder kept" in line and "\n" not in line
    assert sorted(os.listdir(root / folder)) == ["run.log"]


@pytest.mark.parametrize("shape", SHAPES, ids=[s.host for s in SHAPES])
def test_nothing_to_undo_is_still_answered_and_the_prompt_stopped(tree_factory, shape):
    root = tree_factory({"a.txt": "1"})
    line = undo_answer(shape, send(shape, root, shape.prompt(root, "/undo 2"),
                                   shape.prompt_args))
    assert "nothing to undo" in line, line


def test_undo_n_takes_back_n_turns_in_the_events_session(tree_factory):
    shape = SHAPES[0]
    root = tree_factory({"a.txt": "0"})
    for turn in (1, 2, 3):
        assert_quiet(send(shape, root, shape.prompt(root, f"turn {turn}"), ()), "")
        (root / "a.txt").write_text(str(turn))
    other = {**shape.prompt(root, "/undo"), "session_id": "another"}
    assert "nothing to undo in session 'another'" in undo_answer(shape, send(shape, root, other,
                                                                             ()))
    line = undo_answer(shape, send(shape, root, shape.prompt(root, "/undo 2"), ()))
    assert "undid 2 turns" in line and "'turn 3'; 'turn 2'" in line, line
    assert (root / "a.txt").read_text() == "1"


@pytest.mark.parametrize("shape", SHAPES, ids=[s.host for s in SHAPES])
def test_a_missing_folder_fails_with_one_line_and_the_hosts_stdout(tmp_path, shape):
    gone = tmp_path / "gone"
    cwd = tmp_path / "elsewhere"
    cwd.mkdir()
    result = send(shape, cwd, shape.prompt(gone, "hi"), shape.prompt_args)
    if shape.host == "windsurf":
        # No folder in the event: it protects the folder it runs in.
        assert result.returncode == 0, result.stderr
        return
    assert result.returncode == 1
    assert result.stdout.decode().strip() == shape.quiet_prompt
    [line] = result.stderr.decode().splitlines()
    assert line.startswith("undostore: error: hook: ") and str(gone) in line


@pytest.mark.parametrize("host, quiet", [("cursor", "{}"), ("gemini", ""), ("claude-code", ""),
                                         ("windsurf", "")])
def test_garbage_still_gets_what_the_host_accepts_on_stdout(tmp_path, host, quiet):
    result = run_hook(["--host", host], b"\x00not json", cwd=tmp_path)
    assert result.returncode == 1
    assert result.stdout.decode().strip() == quiet
    assert len(result.stderr.decode().splitlines()) == 1


def test_an_unknown_host_fails_with_exit_1(tmp_path):
    result = run_hook(["--host", "vim"], b"{}", cwd=tmp_path)
    assert result.returncode == 1 and b"unknown host 'vim'" in result.stderr


def test_codex_notify_records_a_point_after_each_turn_from_its_argument(tree_factory):
    root = tree_factory({"a.txt": "0"})

    def notify(turn: int) -> None:
        event = {"type": "agent-turn-complete", "thread-id": SESSION, "turn-id": str(turn),
                 "cwd": str(root), "input-messages": [f"turn {turn}"],
                 "last-assistant-message": "done"}
        result = run_hook([json.dumps(event)], b"", cwd=root.parent)
        assert result.returncode == 0 and result.stdout == b"", result.stderr

    (root / "a.txt").write_text("1")
    notify(1)
    (root / "a.txt").write_text("2")
    notify(2)
    with Workspace(root) as ws:
        log = ws.log(SESSION)
        assert [p.label for p in log.undo] == ["after: turn 2", "after: turn 1"]
        assert log.undo[1].after == log.undo[0].id  # turn 2 ended where its point says
        ws.undo(SESSION, confirm=lambda plan: True)  # back to the files after turn 1
    assert (root / "a.txt").read_text() == "1"
