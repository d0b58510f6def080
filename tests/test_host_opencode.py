"""Inside the real OpenCode (issue 46): the pinned `opencode-ai` from tests/hosts (`npm ci`;
`.ci/run` installs it; its platform binary is run directly, as npm 11 runs no postinstall),
driven by `opencode run` against the scripted model on 127.0.0.1 (an OpenAI-compatible
provider: Chat Completions), wired by `undostore init opencode` only. Turns record points,
labelled as typed (without the quotes `opencode run` adds), with their after-turn files;
`/undo`, `/undo`, `/redo`, `/redo`, `/undo 2` put the files right and show undostore's line
(stderr in `opencode run`); OpenCode calls the model for every message, so the model gets
undostore's note in the command's place and never `/undo`; two conversations in one folder
undo their own turns. Its TUI (under tmux): ` /undo` and ` /redo` (a space first: `/undo` is
OpenCode's own) show undostore's line as a toast."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from undostore import Workspace

from .host_support import (
    NODE_MODULES,
    PrintMode,
    after_the_first_undo,
    files,
    host_env,
    in_tui,
    init,
    pinned,
    the_two_turns,
    the_users_edit_is_not_the_turns,
    told_after_a_terminal_step,
    two_conversations_undo_their_own,
    typed,
)
from .model_server import ModelServer, Tool
from .terminal_support import needs_tmux

OPENCODE = NODE_MODULES / "opencode-linux-x64" / "bin" / "opencode"

pytestmark = pinned(OPENCODE, "OpenCode")


class RunPrompts(PrintMode):
    """`opencode run`: a conversation's first prompt makes a session (its id read from the
    JSON events, `--format json`), the next ones continue it (`--session ID`)."""

    def __init__(self, root: Path, env: dict[str, str]) -> None:
        super().__init__([str(OPENCODE), "run", "--auto", "--format", "json"], "", "", root, env)
        self.ids: dict[str, str] = {}

    def __call__(self, conversation: str, text: str, *extra: str
                 ) -> subprocess.CompletedProcess[str]:
        known = self.ids.get(conversation)
        command = [*self.command, *(["--session", known] if known else []), *extra, text]
        done = subprocess.run(command, cwd=self.root, env=self.env, capture_output=True,
                              text=True, timeout=180)
        assert done.returncode == 0, (text, done.stdout, done.stderr)
        if known is None:
            events = [json.loads(line) for line in done.stdout.splitlines() if line.strip()]
            self.ids[conversation] = next(e["sessionID"] for e in events if "sessionID" in e)
        return done

    def session(self, conversation: str) -> str:
        return self.ids[conversation]


class Host:
    """OpenCode in one project folder, against one scripted model (a provider of its own)."""

    def __init__(self, root: Path, home: Path, model: ModelServer) -> None:
        self.root = root
        config = home / "opencode.json"
        self.env = host_env(home, model, OPENCODE_CONFIG=str(config),
                            OPENCODE_DISABLE_MODELS_FETCH="1", OPENCODE_DISABLE_AUTOUPDATE="1",
                            OPENCODE_DISABLE_LSP_DOWNLOAD="1")
        config.write_text(json.dumps({
            "provider": {"scripted": {"npm": "@ai-sdk/openai-compatible", "name": "Scripted",
                                      "options": {"baseURL": f"{model.url}/v1",
                                                  "apiKey": "scripted"},
                                      "models": {"scripted-model": {"name": "Scripted"}}}},
            "model": "scripted/scripted-model", "autoupdate": False, "share": "disabled"}))
        init(root, self.env, "opencode")
        self.prompt = RunPrompts(root, self.env)


def test_turns_undo_and_redo_inside_opencode(tmp_path):
    root = tmp_path / "project"
    root.mkdir()
    (root / "a.txt").write_text("a\n")
    script = {"add b": [Tool("write", {"filePath": str(root / "b.txt"), "content": "b\n"})],
              "edit a": [Tool("bash", {"command": f"printf 'A\\n' > {root / 'a.txt'}",
                                       "description": "edit a"})]}
    with ModelServer(script) as model:
        host = Host(root, tmp_path / "home", model)
        the_two_turns(host.prompt, "one", root)   # labels as typed: no quotes

        undone = host.prompt("one", "/undo")
        assert "undostore: undid the last turn" in undone.stderr, undone.stderr
        assert "'edit a'" in undone.stderr
        assert files(root) == {"a.txt": "a\n", "b.txt": "b\n"}
        told = json.dumps(model.requests[-1]["body"])
        assert "undostore: the user took back the turn 'edit a'" in told
        round_ = after_the_first_undo(host.prompt, "one", root, model)
        assert "undostore: redid the last turn" in round_.second_redo.stderr
        told = told_after_a_terminal_step(host.prompt, "one", "redo", model)
        assert "undostore: the user applied the turn 'add b' again" in told, told[-1500:]


def test_two_conversations_in_one_folder_undo_their_own_turns(tmp_path):
    two_conversations_undo_their_own(
        tmp_path, Host, lambda path, text: Tool("write", {"filePath": str(path), "content": text}),
        "first", "second")


@needs_tmux
def test_undo_and_redo_in_opencodes_tui_typed_with_a_space_first(tmp_path):
    """OpenCode's TUI answers `/undo` and `/redo` itself (its own message revert: "1 message
    reverted"; the files stay as the turn left them, and the hook never sees it); ` /undo`, a
    space first, is a message: the plugin does it, shows undostore's line as a toast, and the
    message in the conversation is undostore's note in the command's place. ` /redo` the same."""
    root = tmp_path / "project"
    root.mkdir()
    (root / "a.txt").write_text("a\n")
    script = {"edit a": [Tool("bash", {"command": f"printf 'A\\n' > {root / 'a.txt'}",
                                       "description": "edit a"})]}
    with ModelServer(script) as model:
        host = Host(root, tmp_path / "home", model)
        with in_tui(tmp_path, [str(OPENCODE)], [], root, host.env, "ctrl+p commands",
                    timeout=120) as tmux:
            typed(tmux, "edit a", "Done.")
            assert files(root) == {"a.txt": "A\n"}
            typed(tmux, " /undo", "undostore: undid the last turn")
            assert files(root) == {"a.txt": "a\n"}
            tmux.wait_for("undostore: the user took back the turn 'edit a'", timeout=30)
            typed(tmux, " /redo", "undostore: redid the last turn")
            assert files(root) == {"a.txt": "A\n"}
            tmux.wait_for("undostore: the user applied the turn 'edit a' again", timeout=30)
            typed(tmux, "/undo", "message reverted")   # OpenCode's own, not undostore's
            assert files(root) == {"a.txt": "A\n"}
    with Workspace(root) as ws:
        [point] = ws.log(ws.history_session(None)[0]).undo
        assert point.label == "edit a"


def test_undo_keeps_what_the_user_wrote_while_the_model_held_its_reply(tmp_path):
    """Attribution by tool call inside the real OpenCode (its plugin's tool.execute.before and
    .after hooks); ` /undo` with a space first, as in its TUI."""
    the_users_edit_is_not_the_turns(
        tmp_path, Host, lambda path, text: Tool("write", {"filePath": str(path), "content": text}),
        lambda path, text: Tool("bash", {"command": f"printf '{text}\\n' > {path}",
                                         "description": "edit"}), undo=" /undo")
