"""Inside the real Pi (issue 46): the pinned `@mariozechner/pi-coding-agent` from tests/hosts
(`npm ci`; `.ci/run` installs it), driven in print mode by the scripted model on 127.0.0.1
speaking OpenAI Chat Completions (tests/model_server.py), wired by `undostore init pi` only.
Turns record points with their after-turn files; `/undo`, `/undo`, `/redo`, `/redo`, `/undo 2`
(commands the extension registers) put the files right, show undostore's line (stderr in print
mode) and never reach the model; the conversation moves with the files in Pi's session tree, so
the model goes on from the files as they are; two conversations in one folder undo their own."""

from __future__ import annotations

import json
import queue
import subprocess
import threading
import time
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
    told_after_a_terminal_step,
    two_conversations_at_once,
    two_conversations_undo_their_own,
    typed,
)
from .model_server import ModelServer, Tool, received_texts
from .terminal_support import needs_tmux

PI = NODE_MODULES / "@mariozechner" / "pi-coding-agent" / "dist" / "cli.js"
NODE = "node"

pytestmark = pinned(PI, "Pi")


class PiPrompts(PrintMode):
    """Pi's print mode: a conversation is a session file (`--session PATH` starts and resumes
    it); the hook knows it by the id in the file's header."""

    def session(self, conversation: str) -> str:
        with open(conversation, encoding="utf-8") as header:
            return json.loads(header.readline())["id"]


class Host:
    """Pi in one project folder, against one scripted model (a provider of its own)."""

    def __init__(self, root: Path, home: Path, model: ModelServer) -> None:
        self.root = root
        agent = home / ".pi" / "agent"
        self.env = host_env(home, model, PI_OFFLINE="1", PI_CODING_AGENT_DIR=str(agent))
        agent.mkdir(parents=True, exist_ok=True)
        (agent / "models.json").write_text(json.dumps({"providers": {"scripted": {
            "baseUrl": f"{model.url}/v1", "api": "openai-completions", "apiKey": "scripted",
            "compat": {"supportsDeveloperRole": False, "supportsReasoningEffort": False},
            "models": [{"id": "scripted-model"}]}}}))
        init(root, self.env, "pi")
        self.prompt = PiPrompts([NODE, str(PI), "--provider", "scripted", "--model",
                                 "scripted-model"], "--session", "--session", root, self.env)


def _project(tmp_path: Path) -> tuple[Path, dict[str, list[Tool]]]:
    """A project with a.txt, and the model's script for the two turns every test runs: 'add b'
    (Pi's write tool) and 'edit a' (a shell command)."""
    root = tmp_path / "project"
    root.mkdir()
    (root / "a.txt").write_text("a\n")
    return root, {"add b": [Tool("write", {"path": str(root / "b.txt"), "content": "b\n"})],
                  "edit a": [Tool("bash", {"command": f"printf 'A\\n' > {root / 'a.txt'}"})]}


def _user_texts(body: dict) -> list[str]:
    return [t for t in received_texts(body) if t.strip()]


def test_turns_undo_and_redo_inside_pi(tmp_path):
    root, script = _project(tmp_path)
    conversation = str(tmp_path / "conversation.jsonl")
    with ModelServer(script) as model:
        host = Host(root, tmp_path / "home", model)
        the_two_turns(host.prompt, conversation, root)

        undone = host.prompt(conversation, "/undo")
        assert "undostore: undid the last turn" in undone.stderr, undone.stderr
        assert "'edit a'" in undone.stderr
        assert files(root) == {"a.txt": "a\n", "b.txt": "b\n"}
        host.prompt(conversation, "so?")
        # The conversation went back with the files: the model no longer sees 'edit a'.
        assert _user_texts(model.requests[-1]["body"]) == ["add b", "so?"]

        after_the_first_undo(host.prompt, conversation, root, model)
        # After `/undo 2` nothing of the conversation is left before the prompt.
        assert _user_texts(model.requests[-1]["body"]) == ["what now?"]
        redone = host.prompt(conversation, "/redo")
        assert "undostore: redid the last turn" in redone.stderr and "'add b'" in redone.stderr
        host.prompt(conversation, "and?")
        # A redo moves the conversation to the end of the turn it applied again.
        assert _user_texts(model.requests[-1]["body"]) == ["add b", "and?"]
        assert files(root) == {"a.txt": "a\n", "b.txt": "b\n"}
        # An undo in a terminal cannot move Pi's conversation: the next prompt tells the model.
        told = told_after_a_terminal_step(host.prompt, conversation, "undo", model)
        assert "undostore: the user took back the turn 'add b'" in told, told[-1500:]


def test_two_conversations_in_one_folder_undo_their_own_turns(tmp_path):
    two_conversations_undo_their_own(
        tmp_path, Host, lambda path, text: Tool("write", {"path": str(path), "content": text}),
        str(tmp_path / "first.jsonl"), str(tmp_path / "second.jsonl"))


@needs_tmux
def test_undo_and_redo_in_pis_tui(tmp_path):
    """Typed in Pi's TUI (tmux, 100x30): the line shows as Pi's notice, the conversation shows
    the turn gone (and back after /redo), and the editor is left empty for the next prompt."""
    root, script = _project(tmp_path)
    with ModelServer(script) as model:
        host = Host(root, tmp_path / "home", model)
        with in_tui(tmp_path, [NODE, str(PI)], ["--provider", "scripted", "--model",
                                                "scripted-model"], root, host.env,
                    "scripted-model", columns=100, rows=30, timeout=60) as tmux:
            typed(tmux, "add b", "Done.")
            typed(tmux, "edit a", "(no output)")
            assert (root / "a.txt").read_text() == "A\n"
            screen = typed(tmux, "/undo", "undostore: undid the last turn")
            assert files(root) == {"a.txt": "a\n", "b.txt": "b\n"}
            assert "(no output)" not in screen, screen      # the turn left the conversation
            screen = typed(tmux, "/redo", "undostore: redid the last turn")
            assert files(root) == {"a.txt": "A\n", "b.txt": "b\n"}
            assert "(no output)" in screen, screen          # and came back with its files
            # The editor was left empty by the undo: "/redo" was the whole prompt.


class Rpc:
    """Pi's RPC mode (`pi --mode rpc`, what editors drive): JSON commands on stdin, its events
    and answers on stdout, one per line."""

    def __init__(self, host: Host) -> None:
        self.proc = subprocess.Popen([NODE, str(PI), "--mode", "rpc", "--provider", "scripted",
                                      "--model", "scripted-model"], cwd=host.root, env=host.env,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, text=True)
        self.lines: queue.Queue[dict] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()
        self.sent = 0

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            try:
                self.lines.put(json.loads(line))
            except ValueError:
                continue

    def prompt(self, message: str, until: str) -> list[dict]:
        """Send `message`; every line until the event of type `until` (a turn's `agent_end`)
        or the prompt's answer (`response`), whichever is asked."""
        self.sent += 1
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps({"id": f"c{self.sent}", "type": "prompt",
                                          "message": message}) + "\n")
        self.proc.stdin.flush()
        seen: list[dict] = []
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            try:
                event = self.lines.get(timeout=1)
            except queue.Empty:
                continue
            seen.append(event)
            if event.get("type") == until and (until != "response"
                                               or event.get("id") == f"c{self.sent}"):
                return seen
        raise AssertionError(f"no {until} for {message!r}: {seen[-5:]}")

    def close(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()


def _notices(events: list[dict]) -> list[str]:
    return [e.get("message", "") for e in events
            if e.get("type") == "extension_ui_request" and e.get("method") == "notify"]


def test_undo_undo_redo_redo_in_pis_rpc_mode(tmp_path):
    """Issue 55, item 18: in RPC mode, each command sent once the previous one's answer came,
    no notice came for either /undo, the second changed nothing (taken for a duplicate of the
    first by the time window), and the first /redo applied turn 2 again. Each command now
    carries an id of its own."""
    root, script = _project(tmp_path)
    with ModelServer(script) as model:
        rpc = Rpc(Host(root, tmp_path / "home", model))
        try:
            rpc.prompt("add b", "agent_end")
            rpc.prompt("edit a", "agent_end")
            assert files(root) == {"a.txt": "A\n", "b.txt": "b\n"}
            steps = [("/undo", "undid", {"a.txt": "a\n", "b.txt": "b\n"}),
                     ("/undo", "undid", {"a.txt": "a\n"}),
                     ("/redo", "redid", {"a.txt": "a\n", "b.txt": "b\n"}),
                     ("/redo", "redid", {"a.txt": "A\n", "b.txt": "b\n"})]
            for command, said, after in steps:
                events = rpc.prompt(command, "response")
                assert any(f"undostore: {said}" in n for n in _notices(events)), (command, events)
                assert files(root) == after, command
        finally:
            rpc.close()


def test_undo_keeps_what_the_user_wrote_while_the_model_held_its_reply(tmp_path):
    """Attribution by tool call inside the real Pi (its extension's tool_call and tool_result
    events)."""
    the_users_edit_is_not_the_turns(tmp_path, Host, _write, _shell,
                                    conversation=str(tmp_path / "conversation.jsonl"))


def test_two_conversations_at_once_each_undo_keeps_the_others_and_the_users_work(tmp_path):
    two_conversations_at_once(tmp_path, Host, _write, _shell, str(tmp_path / "a.jsonl"),
                              str(tmp_path / "b.jsonl"))


def _write(path: Path, text: str) -> Tool:
    return Tool("write", {"path": str(path), "content": text})


def _shell(path: Path, text: str) -> Tool:
    return Tool("bash", {"command": f"printf '{text}\\n' > {path}"})


def test_part_of_a_turn_undone_in_pi_keeps_the_conversation_and_tells_the_model(tmp_path):
    """Issue 59: `/undo PATH` takes back only that file of the turn; the turn is still partly
    there, so the conversation stays where it is, and the model's next prompt says what came
    back."""
    root, script = _project(tmp_path)
    script["both"] = [Tool("write", {"path": str(root / "b.txt"), "content": "b\n"}),
                      Tool("bash", {"command": f"printf 'A\\n' > {root / 'a.txt'}"})]
    conversation = str(tmp_path / "conversation.jsonl")
    with ModelServer(script) as model:
        host = Host(root, tmp_path / "home", model)
        host.prompt(conversation, "both")
        assert files(root) == {"a.txt": "A\n", "b.txt": "b\n"}
        undone = host.prompt(conversation, "/undo b.txt")
        assert "(only b.txt: the rest of the turn stays)" in undone.stderr, undone.stderr
        assert files(root) == {"a.txt": "A\n"}
        host.prompt(conversation, "so?")
        body = model.requests[-1]["body"]
        assert _user_texts(body)[0] == "both", _user_texts(body)   # the conversation stayed
        told = json.dumps(body)
        assert "b.txt" in told and "undostore: the user took back" in told, told[-1500:]
