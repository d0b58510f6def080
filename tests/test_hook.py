"""`undostore hook` as Claude Code runs it: a real child process, one event on stdin.

Done: exit 0 and nothing on stdout (a host feeds stdout to the model). Failure: exit 1 and one
line on stderr, never 2 (exit 2 drops the user's prompt).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from undostore import Workspace


def run(*args: str, stdin: bytes | None = b"", cwd: Path | None = None
        ) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([sys.executable, "-m", "undostore", *args], input=stdin,
                          capture_output=True, cwd=cwd, timeout=60)


def hook(event: object, cwd: Path | None = None) -> subprocess.CompletedProcess[bytes]:
    raw = event if isinstance(event, bytes) else json.dumps(event).encode()
    return run("hook", stdin=raw, cwd=cwd)


def prompt_event(root: Path, prompt: str, session: str = "3f2a-sess", **extra: object) -> dict:
    return {"session_id": session, "transcript_path": str(root / "t.jsonl"), "cwd": str(root),
            "hook_event_name": "UserPromptSubmit", "prompt": prompt, **extra}


def assert_done(result: subprocess.CompletedProcess[bytes]) -> None:
    assert result.returncode == 0, result.stderr
    assert result.stdout == b""


def assert_failed_one_line(result: subprocess.CompletedProcess[bytes]) -> str:
    assert result.returncode == 1, (result.returncode, result.stderr)
    assert result.stdout == b""
    lines = result.stderr.decode().splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith("undostore: error: ")
    return lines[0]


def files(root: Path) -> dict[str, str]:
    return {p.relative_to(root).as_posix(): p.read_text() for p in sorted(root.rglob("*"))
            if p.is_file() and ".git" not in p.parts}


def test_user_prompt_submit_records_a_point_labelled_with_the_first_line(tree_factory):
    root = tree_factory({"a.txt": "1"})
    prompt = "  \n" + "Refactor the parser " * 10 + "\nand then the tests"
    assert_done(hook(prompt_event(root, prompt)))
    with Workspace(root) as ws:
        log = ws.log("3f2a-sess")
        assert len(log.undo) == 1
        assert log.undo[0].label == ("Refactor the parser " * 10).strip()[:80]
        assert len(log.undo[0].label) == 80
        assert log.undo[0].id == ws.snapshot().id


def test_the_root_is_found_from_cwd_in_a_sub_folder_of_a_git_work_tree(tree_factory):
    root = tree_factory({".git": {"HEAD": "ref: refs/heads/main\n"}, "a.txt": "1",
                         "src": {"m.py": "x"}})
    event = prompt_event(root, "go")
    event["cwd"] = str(root / "src")
    assert_done(hook(event, cwd=root.parent))
    with Workspace(root) as ws:
        assert [p.id for p in ws.log("3f2a-sess").undo] == [ws.snapshot().id]


@pytest.mark.parametrize("event", [
    {"hook_event_name": "PreToolUse", "tool_name": "Write", "tool_use_id": "toolu_1",
     "tool_input": {"file_path": "/x/a.txt", "content": "y"}},
    {"hook_event_name": "PostToolUse", "tool_name": "Bash", "tool_input": {"command": "ls"},
     "tool_response": {"stdout": ""}},
    {"hook_event_name": "SessionStart", "source": "startup"},
    {"hook_event_name": "SomethingNew", "whatever": [1, 2]},
])
def test_other_events_and_calls_outside_any_turn_change_nothing(tree_factory, event):
    root = tree_factory({"a.txt": "1"})
    event = {"session_id": "s", "transcript_path": "/t", "cwd": str(root), **event}
    assert_done(hook(event))
    with Workspace(root) as ws:
        assert ws.sessions() == []


def test_other_events_do_not_even_look_at_a_missing_cwd(tmp_path):
    assert_done(hook({"session_id": "s", "cwd": str(tmp_path / "gone"),
                      "hook_event_name": "SessionStart"}))


def test_extra_unknown_fields_are_ignored(tree_factory):
    root = tree_factory({"a.txt": "1"})
    assert_done(hook(prompt_event(root, "hi", permission_mode="default", future={"x": 1})))
    with Workspace(root) as ws:
        assert [s.name for s in ws.sessions()] == ["3f2a-sess"]


@pytest.mark.parametrize("raw, says", [
    (b"", "no hook event"),
    (b"   \n", "no hook event"),
    (b"not json at all", "not JSON"),
    (b'{"hook_event_name": "UserPromptSubmit"', "not JSON"),
    (b"[1, 2]", "not a JSON object"),
    (b"\xff\xfe\x00garbage", "not JSON"),
    (b'{"session_id": "s"}', "hook_event_name"),
])
def test_bad_input_fails_with_one_line_and_exit_1(tree_factory, raw, says):
    root = tree_factory({"a.txt": "1"})
    line = assert_failed_one_line(hook(raw, cwd=root))
    assert says in line
    with Workspace(root) as ws:
        assert ws.sessions() == []


def test_a_cwd_that_does_not_exist_fails_naming_it(tmp_path):
    gone = tmp_path / "no" / "such"
    line = assert_failed_one_line(hook(prompt_event(gone, "hi")))
    assert str(gone) in line


def test_a_session_id_that_cannot_name_a_session_as_it_is_still_gets_one(tree_factory):
    """A host's id is taken as it comes (contract, `hook`): one with a control character is
    recorded in a session named from it, as every event of that conversation will be."""
    root = tree_factory({"a.txt": "1"})
    assert_done(hook(prompt_event(root, "hi", session="bad\x01name")))
    with Workspace(root) as ws:
        (info,) = ws.sessions()
    assert info.name.startswith("bad\ufffdname~") and info.undo == 1


def test_arguments_to_hook_fail_with_exit_1_not_2(tree_factory):
    result = run("hook", "--bogus", stdin=json.dumps({"hook_event_name": "Stop"}).encode())
    assert "hook takes --host H" in assert_failed_one_line(result)


def test_two_hooked_prompts_then_two_undos_give_back_the_files_before_the_first(tree_factory):
    root = tree_factory({"a.txt": "before", "keep.txt": "k"})
    before = files(root)
    assert_done(hook(prompt_event(root, "first prompt")))
    (root / "a.txt").write_text("after turn 1")
    (root / "new.txt").write_text("made in turn 1")
    assert_done(hook(prompt_event(root, "second prompt")))
    (root / "a.txt").write_text("after turn 2")
    (root / "new.txt").unlink()
    for _ in range(2):
        result = run("undo", "--yes", cwd=root)
        assert result.returncode == 0, result.stderr
    assert files(root) == before


def test_a_cwd_at_the_file_system_root_fails_with_one_line_not_a_store_for_it(tmp_path):
    top = os.path.abspath(os.sep)   # "/" here, "C:\\" on Windows
    line = assert_failed_one_line(hook(prompt_event(Path(top), "hi")))
    assert "refusing to protect the file-system root" in line


@pytest.mark.skipif(sys.platform != "win32", reason="case-insensitive paths (Windows)")
def test_a_cwd_spelled_in_another_case_finds_the_same_store(tree_factory):
    root = tree_factory({"a.txt": "1", "sub": {"b.txt": "2"}})
    with Workspace(root) as ws:
        ws.snapshot(session="first")
    event = prompt_event(root, "hi", session="second")
    event["cwd"] = str(root / "sub").swapcase()
    assert_done(hook(event))
    with Workspace(root) as ws:
        assert [s.name for s in ws.sessions()] == ["first", "second"]
