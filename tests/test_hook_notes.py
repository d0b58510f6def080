"""The model is told (issue 46): after `/undo` or `/redo` (typed in the host, or `undostore undo`
in a terminal), the session's next prompt carries a short note for the model, the turns moved
and their files, where the host takes context from a hook (Claude Code and Codex:
`hookSpecificOutput.additionalContext` of UserPromptSubmit; Gemini: of BeforeAgent). Given
once; a host without that channel (Cursor) answers as ever and the note waits."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

N = iter(range(1, 10_000))


def _hook(event: dict, host: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "undostore", "hook", "--host", host],
                          input=json.dumps(event), capture_output=True, text=True, timeout=60)


def _prompt(host: str, root: Path, prompt: str) -> dict:
    if host == "gemini":
        return {"session_id": "conv", "cwd": str(root), "hook_event_name": "BeforeAgent",
                "prompt": prompt, "timestamp": f"2026-12-06T10:00:{next(N):05d}Z"}
    if host == "cursor":
        return {"conversation_id": "conv", "generation_id": f"g{next(N)}",
                "hook_event_name": "beforeSubmitPrompt", "workspace_roots": [str(root)],
                "prompt": prompt}
    return {"session_id": "conv", "cwd": str(root), "hook_event_name": "UserPromptSubmit",
            "prompt": prompt, "turn_id": f"t{next(N)}", "prompt_id": f"p{next(N)}"}


CONTEXT = {"claude-code": "UserPromptSubmit", "codex": "UserPromptSubmit",
           "gemini": "BeforeAgent"}


def _note(done: subprocess.CompletedProcess[str], host: str) -> str:
    assert done.returncode == 0, done.stderr
    output = json.loads(done.stdout)["hookSpecificOutput"]
    assert output["hookEventName"] == CONTEXT[host]
    return output["additionalContext"]


@pytest.mark.parametrize("host", ["claude-code", "codex", "gemini"])
def test_the_prompt_after_an_undo_tells_the_model_once(tree_factory, host):
    root = tree_factory({"a.txt": "0\n", "b.txt": "b\n"})
    assert _hook(_prompt(host, root, "Change a and add c"), host).returncode == 0
    (root / "a.txt").write_text("1\n")
    (root / "c.txt").write_text("new\n")
    undone = _hook(_prompt(host, root, "/undo"), host)
    assert undone.returncode == 0 and "undid the last turn" in undone.stdout, undone
    note = _note(_hook(_prompt(host, root, "What now?"), host), host)
    assert "took back the turn 'Change a and add c'" in note, note
    assert "a.txt, c.txt" in note and "b.txt" not in note, note
    again = _hook(_prompt(host, root, "And now?"), host)
    assert again.returncode == 0 and (again.stdout == "" or "hookSpecificOutput" not in
                                      again.stdout), again.stdout
    redone = _hook(_prompt(host, root, "/redo"), host)
    assert "redid" in redone.stdout, redone
    note = _note(_hook(_prompt(host, root, "Go on"), host), host)
    assert "applied the turn 'Change a and add c' again" in note and "a.txt, c.txt" in note


def test_an_undo_typed_in_a_terminal_is_told_too(tree_factory, cli):
    root = tree_factory({"a.txt": "0\n"})
    assert _hook(_prompt("claude-code", root, "Edit a"), "claude-code").returncode == 0
    (root / "a.txt").write_text("1\n")
    done = cli.run("undo", "-s", "conv", "--yes", root=root)
    assert done.returncode == 0, done.stderr
    note = _note(_hook(_prompt("claude-code", root, "Hello"), "claude-code"), "claude-code")
    assert "took back the turn 'Edit a'" in note and "a.txt" in note


def test_a_host_without_a_context_channel_answers_as_ever(tree_factory):
    root = tree_factory({"a.txt": "0\n"})
    assert _hook(_prompt("cursor", root, "Edit a"), "cursor").returncode == 0
    (root / "a.txt").write_text("1\n")
    assert "undid" in _hook(_prompt("cursor", root, "/undo"), "cursor").stdout
    done = _hook(_prompt("cursor", root, "Next"), "cursor")
    assert done.returncode == 0 and json.loads(done.stdout) == {"continue": True}
