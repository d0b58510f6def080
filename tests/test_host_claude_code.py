"""Inside the real Claude Code (issue 46): the pinned `@anthropic-ai/claude-code` from
tests/hosts (`npm ci`; `.ci/run` installs it, so this never skips in CI), driven in print mode
by a scripted model on 127.0.0.1 (tests/model_server.py), wired by `undostore init claude-code`
only. A turn that writes a file records its point and the files after it; `/undo`, `/redo` typed
as prompts are done by the hook, shown to the user, and never reach the model; the next prompt
carries undostore's note to the model; two conversations in one folder each undo their own."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import pytest

from .host_support import (
    NODE_MODULES,
    PrintMode,
    after_the_first_undo,
    files,
    host_env,
    in_tui,
    init,
    pinned,
    slow_turn_ends,
    the_two_turns,
    the_users_edit_is_not_the_turns,
    two_conversations_at_once,
    two_conversations_undo_their_own,
    typed,
)
from .model_server import ModelServer, Tool
from .terminal_support import needs_tmux

CLAUDE = NODE_MODULES / "@anthropic-ai" / "claude-code-linux-x64" / "claude"

pytestmark = pinned(CLAUDE, "Claude Code")


class Host:
    """Claude Code in one project folder, against one scripted model."""

    def __init__(self, root: Path, home: Path, model: ModelServer, **extra: str) -> None:
        self.root = root
        self.env = host_env(home, model, ANTHROPIC_BASE_URL=model.url,
                            ANTHROPIC_API_KEY="sk-scripted",
                            CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1", DISABLE_TELEMETRY="1",
                            DISABLE_AUTOUPDATER="1", **extra)
        init(root, self.env, "claude-code")
        # As root, --dangerously-skip-permissions is refused: these let the turns edit.
        self.prompt = PrintMode([str(CLAUDE), "--permission-mode", "acceptEdits",
                                 "--allowedTools", "Bash Write Edit Read"],
                                "--session-id", "--resume", root, self.env)


def two_turn_project(tmp_path: Path) -> tuple[Path, dict[str, list[Tool]]]:
    """The project, and the scripted model's two turns: a file written, and a shell command
    that edits another (as an agent's `sed` or `rm` would: undo takes it back too)."""
    root = tmp_path / "project"
    root.mkdir()
    (root / "a.txt").write_text("a\n")
    return root, {"add b": [Tool("Write", {"file_path": str(root / "b.txt"),
                                           "content": "b\n"})],
                  "edit a": [Tool("Bash", {"command": f"printf 'A\\n' > {root / 'a.txt'}",
                                           "description": "edit a"})]}


def test_turns_undo_and_redo_inside_claude_code(tmp_path):
    root, script = two_turn_project(tmp_path)
    conversation = str(uuid.uuid4())
    with ModelServer(script) as model:
        host = Host(root, tmp_path / "home", model)
        the_two_turns(host.prompt, conversation, root)

        undone = host.prompt(conversation, "/undo")
        assert "undid the last turn" in undone.stdout and "'edit a'" in undone.stdout
        assert files(root) == {"a.txt": "a\n", "b.txt": "b\n"}
        second_redo, told = after_the_first_undo(host.prompt, conversation, root, model)
        assert "redid" in second_redo.stdout
        at = told.find("undostore: ")
        assert "the user took back the 2 turns 'edit a', 'add b'" in told, told[at:at + 2000]
        assert "b.txt" in told


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the resident process: Linux")
def test_turns_undo_and_redo_through_the_resident_process(tmp_path, monkeypatch):
    """With `UNDOSTORE_RESIDENT=on` in the host's environment, every hook call Claude Code makes
    is run by the resident process's children, and the turns, `/undo` and `/redo` come out as
    they do in the hook's own process."""
    short = Path(tempfile.mkdtemp(prefix="us-", dir="/tmp"))   # a socket's path must be short
    undostore_home = short / ".undostore"
    monkeypatch.setenv("UNDOSTORE_HOME", str(undostore_home))
    run = undostore_home / "run"
    root, script = two_turn_project(tmp_path)
    conversation = str(uuid.uuid4())
    resident = None
    try:
        with ModelServer(script) as model:
            host = Host(root, tmp_path / "home", model, UNDOSTORE_RESIDENT="on")
            resident = subprocess.Popen([sys.executable, "-m", "undostore_cli.resident.serve"],
                                        env=host.env, start_new_session=True)
            deadline = time.monotonic() + 30
            while not (run / "resident.json").exists():
                assert time.monotonic() < deadline and resident.poll() is None
                time.sleep(0.05)
            the_two_turns(host.prompt, conversation, root)
            undone = host.prompt(conversation, "/undo")
            assert "undid the last turn" in undone.stdout and "'edit a'" in undone.stdout
            assert files(root) == {"a.txt": "a\n", "b.txt": "b\n"}
            redone = host.prompt(conversation, "/redo")
            assert "redid" in redone.stdout
            assert files(root) == {"a.txt": "A\n", "b.txt": "b\n"}
        while json.loads((run / "resident.json").read_text())["served"] < 6:
            assert time.monotonic() < deadline + 60, "the hook calls were not all served"
            time.sleep(0.05)
    finally:
        if resident is not None:
            os.killpg(resident.pid, signal.SIGTERM)
            resident.wait(timeout=30)
        shutil.rmtree(short, ignore_errors=True)


def test_two_conversations_in_one_folder_undo_their_own_turns(tmp_path):
    two_conversations_undo_their_own(
        tmp_path, Host, lambda path, text: Tool("Write", {"file_path": str(path), "content": text}),
        str(uuid.uuid4()), str(uuid.uuid4()))


@needs_tmux
def test_undo_in_claude_codes_tui_and_its_footer(tmp_path):
    """Typed in Claude Code's TUI (tmux): `/undo` is done by the hook and shown as Claude Code
    shows a blocked prompt (the line under "UserPromptSubmit operation blocked by hook"), and
    the footer (undostore's `status` as its statusLine) shows the counts after the undo: a
    blocked prompt adds no assistant message, so only the footer's refresh interval runs it
    again once the turn's slowed end has passed. The user's first-run answers are in
    ~/.claude.json as Claude Code keeps them (onboarding done, the API key approved, the
    folder trusted)."""
    root = tmp_path / "project"
    root.mkdir()
    (root / "a.txt").write_text("a\n")
    script = {"edit a": [Tool("Bash", {"command": f"printf 'A\\n' > {root / 'a.txt'}",
                                       "description": "edit a"})]}
    with ModelServer(script) as model:
        host = Host(root, tmp_path / "home", model)
        slow_turn_ends(host.env, tmp_path, seconds=3)   # the footer's last run is the turn's
        (tmp_path / "home" / ".claude.json").write_text(json.dumps({
            "hasCompletedOnboarding": True, "theme": "dark",
            "customApiKeyResponses": {"approved": [host.env["ANTHROPIC_API_KEY"][-20:]],
                                      "rejected": []},
            "projects": {str(root): {"hasTrustDialogAccepted": True,
                                     "hasCompletedProjectOnboarding": True}}}))
        with in_tui(tmp_path, [str(CLAUDE)], ["--permission-mode", "acceptEdits",
                                              "--allowedTools", "Bash Write Edit Read"],
                    root, host.env, "undo:0 redo:0 no-hook") as tmux:   # no turn here yet
            typed(tmux, "edit a", "undo:1 redo:0")
            # The footer counts a turn from its first call's start (it may have written): the
            # count can show while the Bash call still runs (a loaded machine), so the file is
            # waited for.
            deadline = time.monotonic() + 60
            while files(root) != {"a.txt": "A\n"} and time.monotonic() < deadline:
                time.sleep(0.1)
            assert files(root) == {"a.txt": "A\n"}
            typed(tmux, "/undo", "undostore: undid the last turn")
            assert files(root) == {"a.txt": "a\n"}
            screen = tmux.wait_for("undo:0 redo:1", timeout=30)
            assert "UserPromptSubmit operation blocked by hook" in screen, screen
            assert "restoring" not in screen, screen


def test_undo_keeps_what_the_user_wrote_while_the_model_held_its_reply(tmp_path):
    """Attribution by tool call inside the real Claude Code (PreToolUse/PostToolUse)."""
    the_users_edit_is_not_the_turns(
        tmp_path, Host, lambda path, text: Tool("Write", {"file_path": str(path), "content": text}),
        lambda path, text: Tool("Bash", {"command": f"printf '{text}\\n' > {path}",
                                         "description": "edit"}),
        conversation=str(uuid.uuid4()))


def test_two_conversations_at_once_each_undo_keeps_the_others_and_the_users_work(tmp_path):
    two_conversations_at_once(
        tmp_path, Host, lambda path, text: Tool("Write", {"file_path": str(path), "content": text}),
        lambda path, text: Tool("Bash", {"command": f"printf '{text}\\n' > {path}",
                                         "description": "edit"}),
        str(uuid.uuid4()), str(uuid.uuid4()))
