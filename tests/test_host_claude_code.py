"""Inside the real Claude Code (issue 46): the pinned `@anthropic-ai/claude-code` from
tests/hosts (`npm ci`; `.ci/run` installs it, so this never skips in CI), driven in print mode
by a scripted model on 127.0.0.1 (tests/model_server.py), wired by `undostore init claude-code`
only. A turn that writes a file records its point and the files after it; `/undo`, `/redo` typed
as prompts are done by the hook, shown to the user, and never reach the model; the next prompt
carries undostore's note to the model; two conversations in one folder each undo their own."""

from __future__ import annotations

import sys
import uuid
from pathlib import Path

import pytest

from .host_support import (
    NODE_MODULES,
    PrintMode,
    after_the_first_undo,
    files,
    host_env,
    init,
    the_two_turns,
)
from .model_server import ModelServer, Tool

CLAUDE = NODE_MODULES / "@anthropic-ai" / "claude-code-linux-x64" / "claude"

pytestmark = pytest.mark.skipif(
    sys.platform != "linux" or not CLAUDE.exists(),
    reason="the pinned Claude Code (run `npm ci` in tests/hosts; .ci/run does)")


class Host:
    """Claude Code in one project folder, against one scripted model."""

    def __init__(self, root: Path, home: Path, model: ModelServer) -> None:
        self.root = root
        self.env = host_env(home, model, ANTHROPIC_BASE_URL=model.url,
                            ANTHROPIC_API_KEY="sk-scripted",
                            CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1", DISABLE_TELEMETRY="1",
                            DISABLE_AUTOUPDATER="1")
        init(root, self.env, "claude-code")
        # As root, --dangerously-skip-permissions is refused: these let the turns edit.
        self.prompt = PrintMode([str(CLAUDE), "--permission-mode", "acceptEdits",
                                 "--allowedTools", "Bash Write Edit Read"],
                                "--session-id", "--resume", root, self.env)


def test_turns_undo_and_redo_inside_claude_code(tmp_path):
    root = tmp_path / "project"
    root.mkdir()
    (root / "a.txt").write_text("a\n")
    script = {"add b": [Tool("Write", {"file_path": str(root / "b.txt"), "content": "b\n"})],
              # A shell command, as an agent's `sed` or `rm` would be: undo takes it back too.
              "edit a": [Tool("Bash", {"command": f"printf 'A\\n' > {root / 'a.txt'}",
                                       "description": "edit a"})]}
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


def test_two_conversations_in_one_folder_undo_their_own_turns(tmp_path):
    root = tmp_path / "project"
    root.mkdir()
    (root / "shared.txt").write_text("s\n")
    script = {"write x": [Tool("Write", {"file_path": str(root / "x.txt"), "content": "x\n"})],
              "write y": [Tool("Write", {"file_path": str(root / "y.txt"), "content": "y\n"})]}
    first, second = str(uuid.uuid4()), str(uuid.uuid4())
    with ModelServer(script) as model:
        host = Host(root, tmp_path / "home", model)
        host.prompt(first, "write x")
        host.prompt(second, "write y")
        (root / "shared.txt").write_text("the user's own edit\n")
        host.prompt(first, "/undo")
        assert files(root) == {"shared.txt": "the user's own edit\n", "y.txt": "y\n"}
        host.prompt(second, "/undo")
        assert files(root) == {"shared.txt": "the user's own edit\n"}
        host.prompt(first, "/redo")
        assert files(root) == {"shared.txt": "the user's own edit\n", "x.txt": "x\n"}
