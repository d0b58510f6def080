"""Inside the real GitHub Copilot CLI (issue 57): the pinned `@github/copilot` from tests/hosts
(`npm ci`; `.ci/run` installs it), driven in print mode against the scripted model on 127.0.0.1
as an OpenAI-compatible provider of the user's own (`COPILOT_PROVIDER_BASE_URL`: no GitHub
sign-in), wired by `undostore init copilot` only, in a folder the user trusted as Copilot asks
(an untrusted folder loads no hook of its own, and `doctor` says so). Copilot reports every
tool call (`preToolUse`/`postToolUse`), so a turn is its calls' changes; a typed `/undo` is
answered by the hook (`handled`: Copilot shows the line and never asks the model), and the next
prompt carries undostore's note (`additionalContext`)."""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from pathlib import Path

from .host_support import (
    NODE_MODULES,
    PrintMode,
    after_the_first_undo,
    files,
    host_env,
    init,
    pinned,
    the_two_turns,
    the_users_edit_is_not_the_turns,
    two_conversations_at_once,
    two_conversations_undo_their_own,
)
from .model_server import ModelServer, Tool

COPILOT = NODE_MODULES / "@github" / "copilot" / "npm-loader.js"
NODE = "node"

pytestmark = pinned(COPILOT, "Copilot CLI")


class Host:
    """Copilot CLI in one project folder, against one scripted model. Its package unpacks
    itself into a cache on first start (1 s): the tests share one (`XDG_CACHE_HOME`)."""

    def __init__(self, root: Path, home: Path, model: ModelServer, trusted: bool = True
                 ) -> None:
        self.root = root
        self.env = host_env(home, model, COPILOT_PROVIDER_BASE_URL=f"{model.url}/v1",
                            COPILOT_PROVIDER_API_KEY="scripted", COPILOT_MODEL="scripted",
                            COPILOT_AUTO_UPDATE="false", NO_COLOR="1",
                            XDG_CACHE_HOME=str(NODE_MODULES.parent / ".cache"))
        config = home / ".copilot"
        config.mkdir(parents=True, exist_ok=True)
        if trusted:   # what Copilot's trust prompt saves
            (config / "config.json").write_text(json.dumps({"trustedFolders": [str(root)]}))
        self.wired = init(root, self.env, "copilot")
        self.prompt = PrintMode([NODE, str(COPILOT), "--allow-all-tools"], "--session-id",
                                "--session-id", root, self.env)


def _create(path: Path, text: str) -> Tool:
    return Tool("create", {"path": str(path), "file_text": text})


def _shell(path: Path, text: str) -> Tool:
    return Tool("bash", {"command": f"printf '{text}\\n' > {path}", "description": "edit"})


def test_turns_undo_and_redo_inside_copilot(tmp_path):
    root = tmp_path / "project"
    root.mkdir()
    (root / "a.txt").write_text("a\n")
    script = {"add b": [_create(root / "b.txt", "b\n")],
              "edit a": [_shell(root / "a.txt", "A")]}
    conversation = str(uuid.uuid4())
    with ModelServer(script) as model:
        host = Host(root, tmp_path / "home", model)
        assert "ok    copilot: trust" in host.wired.stdout, host.wired.stdout
        the_two_turns(host.prompt, conversation, root)
        asked = len(model.requests)
        undone = host.prompt(conversation, "/undo")
        assert "undostore: undid the last turn" in undone.stdout, undone.stdout
        assert len(model.requests) == asked   # handled by the hook: the model was not asked
        assert files(root) == {"a.txt": "a\n", "b.txt": "b\n"}
        told = after_the_first_undo(host.prompt, conversation, root, model,
                                   answered_in_transcript=True).told
        assert "undostore: the user took back the 2 turns 'edit a', 'add b'" in told, told


def test_undo_keeps_what_the_user_wrote_while_the_model_held_its_reply(tmp_path):
    """Copilot runs the two calls of one reply side by side; each is its own."""
    the_users_edit_is_not_the_turns(tmp_path, Host, _create, _shell,
                                    conversation=str(uuid.uuid4()))


def test_two_conversations_in_one_folder_undo_their_own_turns(tmp_path):
    two_conversations_undo_their_own(tmp_path, Host, _create, str(uuid.uuid4()),
                                     str(uuid.uuid4()))


def test_an_untrusted_folder_runs_no_hook_and_doctor_says_so(tmp_path):
    root = tmp_path / "project"
    root.mkdir()
    with ModelServer({}) as model:
        host = Host(root, tmp_path / "home", model, trusted=False)
        assert "FAIL  copilot: trust" in host.wired.stdout, host.wired.stdout
        host.prompt(str(uuid.uuid4()), "hello")
        assert model.requests, "the turn reached the model"
        doctor = subprocess.run([sys.executable, "-m", "undostore", "doctor", "copilot"],
                                cwd=root, env=host.env, capture_output=True, text=True,
                                timeout=60)
    assert doctor.returncode == 1
    assert "FAIL  copilot: hooks fired: copilot has not run undostore's hook here" \
        in doctor.stdout, doctor.stdout


def test_two_conversations_at_once_each_undo_keeps_the_others_and_the_users_work(tmp_path):
    two_conversations_at_once(tmp_path, Host, _create, _shell, str(uuid.uuid4()),
                              str(uuid.uuid4()))
