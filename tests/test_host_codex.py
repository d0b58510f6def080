"""Inside the real Codex (issue 46): the pinned `@openai/codex` from tests/hosts (`npm ci`;
`.ci/run` installs it; its linux-x64 native binary is run directly), driven by `codex exec`
against the scripted model on 127.0.0.1 speaking the Responses API (tests/model_server.py),
wired by `undostore init codex` only, in a project the user trusted and whose hooks the user
reviewed as Codex asks (its `/hooks` screen, through the app-server calls that screen makes).

Codex runs the project's hooks and the user-wide ones at once, so with both wired (`init codex`
and `init codex --global`) every event arrives twice: one `/undo` must still take back one turn.
Turns record points with their after-turn files; `/undo`, `/undo`, `/redo`, `/redo`, `/undo 2`
put the files right and never reach the model; the next prompt carries undostore's note. Before
the review Codex runs no hook at all, and `doctor` says so."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

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
    two_conversations_undo_their_own,
    typed,
)
from .model_server import FREEFORM, ModelServer, Tool
from .terminal_support import needs_tmux

CODEX = (NODE_MODULES / "@openai" / "codex-linux-x64" / "vendor" / "x86_64-unknown-linux-musl"
         / "bin" / "codex")
MODEL = "scripted-model"

pytestmark = pinned(CODEX, "Codex")


class ExecPrompts(PrintMode):
    """`codex exec`: a conversation's first prompt starts a thread (its id printed as
    "session id: ..."), the next ones go on with `codex exec resume ID`."""

    def __init__(self, root: Path, env: dict[str, str]) -> None:
        super().__init__([str(CODEX), "exec", "--skip-git-repo-check"], "", "", root, env)
        self.ids: dict[str, str] = {}

    def __call__(self, conversation: str, text: str, *extra: str
                 ) -> subprocess.CompletedProcess[str]:
        known = self.ids.get(conversation)
        command = [*self.command, *extra, *(["resume", known] if known else []), text]
        done = subprocess.run(command, cwd=self.root, env=self.env, capture_output=True,
                              text=True, timeout=180, stdin=subprocess.DEVNULL)
        assert done.returncode == 0, (text, done.stdout, done.stderr)
        if known is None:
            self.ids[conversation] = re.search(r"session id: (\S+)", done.stderr).group(1)
        return done

    def session(self, conversation: str) -> str:
        return self.ids[conversation]


def _catalog(home: Path, env: dict[str, str]) -> Path:
    """A model catalog naming the scripted model: Codex's own entry for a model it knows (its
    tools: `exec_command`, ...), renamed."""
    listed = subprocess.run([str(CODEX), "debug", "models"], env=env, capture_output=True,
                            text=True, timeout=60, check=True)
    entry = next(m for m in json.loads(listed.stdout)["models"] if m["slug"] == "gpt-5.5")
    path = home / "catalog.json"
    path.write_text(json.dumps({"models": [{**entry, "slug": MODEL, "display_name": MODEL}]}))
    return path


def review_hooks(root: Path, env: dict[str, str]) -> int:
    """What the user's review in Codex's `/hooks` screen does: list the hooks Codex found for
    the project (app-server `hooks/list`) and record each one's hash as trusted in the user's
    config. Returns how many were reviewed."""
    server = subprocess.Popen([str(CODEX), "app-server"], cwd=root, env=env, text=True,
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              stderr=subprocess.DEVNULL)

    def ask(ident: int, method: str, params: dict) -> dict:
        server.stdin.write(json.dumps({"jsonrpc": "2.0", "id": ident, "method": method,
                                       "params": params}) + "\n")
        server.stdin.flush()
        while True:
            reply = json.loads(server.stdout.readline())
            if reply.get("id") == ident:
                return reply["result"]

    try:
        ask(1, "initialize", {"clientInfo": {"name": "undostore-tests", "version": "1"}})
        server.stdin.write(json.dumps({"jsonrpc": "2.0", "method": "initialized"}) + "\n")
        hooks = [h for listed in ask(2, "hooks/list", {"cwds": [str(root)]})["data"]
                 for h in listed["hooks"] if h["trustStatus"] != "trusted"]
    finally:
        server.stdin.close()
        server.wait(timeout=30)
    with open(Path(env["CODEX_HOME"]) / "config.toml", "a", encoding="utf-8") as config:
        for hook in hooks:
            config.write(f"\n[hooks.state.{json.dumps(hook['key'])}]\n"
                         f"trusted_hash = {json.dumps(hook['currentHash'])}\n")
    return len(hooks)


class Host:
    """Codex in one trusted project folder, against one scripted model (a provider of its
    own), its hooks wired by `init` (project and, with `user_wide`, the user's too)."""

    def __init__(self, root: Path, home: Path, model: ModelServer, user_wide: bool = True,
                 reviewed: bool = True) -> None:
        self.root = root
        codex_home = home / ".codex"
        codex_home.mkdir(parents=True, exist_ok=True)
        self.env = host_env(home, model, CODEX_HOME=str(codex_home), SCRIPTED_API_KEY="x")
        catalog = _catalog(home, self.env)
        (codex_home / "config.toml").write_text(
            f'model = "{MODEL}"\nmodel_provider = "scripted"\n'
            f'model_catalog_json = "{catalog}"\napproval_policy = "never"\n'
            f'sandbox_mode = "danger-full-access"\n'
            # Keys typed by tmux come fast: without this, Codex's TUI takes them for a paste
            # and an Enter right after them for a new line.
            f'disable_paste_burst = true\n'
            f'[model_providers.scripted]\nname = "Scripted"\nbase_url = "{model.url}/v1"\n'
            f'wire_api = "responses"\nenv_key = "SCRIPTED_API_KEY"\n'
            f'[projects.{json.dumps(str(root))}]\ntrust_level = "trusted"\n')
        self.wired = init(root, self.env, "codex")
        if user_wide:
            init(root, self.env, "codex", "--global")
        if reviewed:
            # Each file's four events: a turn's prompt and end, each tool call's before and after
            assert review_hooks(root, self.env) == (8 if user_wide else 4)
        self.prompt = ExecPrompts(root, self.env)


def _script(root: Path) -> dict[str, list[Tool]]:
    return {"add b": [Tool("exec_command", {"cmd": f"printf 'b\\n' > {root / 'b.txt'}"})],
            "edit a": [Tool("exec_command", {"cmd": f"printf 'A\\n' > {root / 'a.txt'}"})]}


def test_turns_undo_and_redo_inside_codex_with_every_event_twice(tmp_path):
    root = tmp_path / "project"
    root.mkdir()
    (root / "a.txt").write_text("a\n")
    with ModelServer(_script(root)) as model:
        host = Host(root, tmp_path / "home", model)
        doctor = subprocess.run([sys.executable, "-m", "undostore", "doctor", "codex"],
                                cwd=root, env=host.env, capture_output=True, text=True,
                                timeout=60)
        assert "ok    codex: trust: the project is trusted and undostore's hooks were reviewed" \
               in doctor.stdout, doctor.stdout
        the_two_turns(host.prompt, "one", root)

        undone = host.prompt("one", "/undo")   # delivered twice: one turn taken back
        assert "hook: UserPromptSubmit Blocked" in undone.stderr, undone.stderr
        assert files(root) == {"a.txt": "a\n", "b.txt": "b\n"}
        told = after_the_first_undo(host.prompt, "one", root, model).told
        # The note comes once (the duplicate hook's answer carries none), as a developer
        # message after the prompt, with the net result of the five steps: both turns undone.
        assert told.count("undostore: the user took back") == 1, told[-3000:]
        assert "the user took back the 2 turns 'edit a', 'add b'" in told


def test_before_the_review_no_hook_runs_and_doctor_says_so(tmp_path):
    root = tmp_path / "project"
    root.mkdir()
    (root / "a.txt").write_text("a\n")
    with ModelServer(_script(root)) as model:
        host = Host(root, tmp_path / "home", model, user_wide=False, reviewed=False)
        assert "FAIL  codex: trust: the project is trusted, but Codex runs no hook until it " \
               "was reviewed" in host.wired.stdout, host.wired.stdout
        host.prompt("one", "add b")
        assert files(root) == {"a.txt": "a\n", "b.txt": "b\n"}   # the turn ran, unprotected
        doctor = subprocess.run([sys.executable, "-m", "undostore", "doctor", "codex"],
                                cwd=root, env=host.env, capture_output=True, text=True,
                                timeout=60)
    assert doctor.returncode == 1, doctor.stdout
    assert "FAIL  codex: hooks fired: codex has not run undostore's hook here" in doctor.stdout


@needs_tmux
def test_undo_in_codexs_tui_typed_with_a_space_first(tmp_path):
    """Codex's TUI takes a prompt starting with `/` for one of its own commands ("Unrecognized
    command '/undo'": the hook never sees it); ` /undo`, a space first, is a prompt: done by
    the hook and shown as Codex shows a blocked prompt, "Blocked by hook" and the line."""
    root = tmp_path / "project"
    root.mkdir()
    (root / "a.txt").write_text("a\n")
    with ModelServer(_script(root)) as model:
        host = Host(root, tmp_path / "home", model, user_wide=False)
        with in_tui(tmp_path, [str(CODEX)], ["--no-daemon"], root, host.env,
                    "Ask Codex to do anything", timeout=60) as tmux:
            typed(tmux, "add b", "Worked for")
            assert files(root) == {"a.txt": "a\n", "b.txt": "b\n"}
            typed(tmux, "/undo", "Unrecognized command '/undo'")
            assert files(root) == {"a.txt": "a\n", "b.txt": "b\n"}   # Codex's, not the hook's
            tmux.send("Home")            # the command stays in the composer: a space first
            screen = typed(tmux, " ", "Blocked by hook")
            tmux.wait_for("undostore: undid the last turn", timeout=30)
            assert files(root) == {"a.txt": "a\n"}
            assert "'add b'" in tmux.screen(), screen


def test_two_conversations_in_one_folder_undo_their_own_turns(tmp_path):
    """With project and user-wide hooks: every event twice, each conversation's once."""
    two_conversations_undo_their_own(
        tmp_path, Host,
        lambda path, text: Tool("exec_command", {"cmd": f"printf '{text}' > {path}"}),
        "first", "second")


def test_undo_keeps_what_the_user_wrote_while_the_model_held_its_reply(tmp_path):
    """Attribution by tool call inside the real Codex: its apply_patch (whose files the patch
    names) and its shell; every event comes twice (project and user-wide hooks)."""
    the_users_edit_is_not_the_turns(
        tmp_path, Host,
        lambda path, text: Tool("apply_patch", {FREEFORM: f"*** Begin Patch\n*** Add File: "
                                                          f"{path.name}\n+{text.rstrip()}\n"
                                                          f"*** End Patch\n"}),
        lambda path, text: Tool("exec_command", {"cmd": f"printf '{text}\\n' > {path}"}),
        undo=" /undo")
