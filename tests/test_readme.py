"""The README's examples run as written: its Python blocks with a small fake agent, and the
commands its Claude Code and MCP snippets wire in."""

from __future__ import annotations

import importlib.util
import json
import re
import shlex
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from undostore_cli.hosts import init as hosts_init

README = Path(__file__).resolve().parent.parent / "README.md"


def blocks(language: str) -> list[str]:
    return re.findall(rf"^```{language}\n(.*?)^```", README.read_text(), re.S | re.M)


def files(root: Path) -> dict[str, str]:
    return {p.relative_to(root).as_posix(): p.read_text() for p in sorted(root.rglob("*"))
            if p.is_file()}


@dataclass
class Turn:
    prompt: str
    edit: Callable[[], None]
    command: str | None = None

    def run(self) -> None:
        self.edit()

    def user_command(self) -> str | None:
        return self.command


class FakeAgent:
    """Edits files turn by turn; the user types /undo or /redo after some turns."""

    session = "chat-42"

    def __init__(self, turns: list[Turn]) -> None:
        self._turns = turns

    def turns(self) -> list[Turn]:
        return self._turns


def test_the_library_example_runs_with_a_fake_agent(tmp_path, capsys):
    (example,) = [b for b in blocks("python") if "def run_agent" in b]
    namespace: dict = {}
    exec(compile(example, str(README), "exec"), namespace)
    project = tmp_path / "project"
    project.mkdir()
    seen: list[dict[str, str]] = []

    def write(name: str, text: str) -> Callable[[], None]:
        return lambda: (project / name).write_text(text)

    def both(*edits: Callable[[], None]) -> Callable[[], None]:
        return lambda: [edit() for edit in edits]

    agent = FakeAgent([
        Turn("create a.txt", write("a.txt", "1")),
        Turn("change a.txt, add b.txt", both(write("a.txt", "2"), write("b.txt", "b")),
             "/undo"),
        Turn("look around", lambda: seen.append(files(project)), "/redo"),
        Turn("change a.txt again", both(lambda: seen.append(files(project)), write("a.txt", "3")),
             "/undo"),
        Turn("nothing", lambda: None, "/undo"),
    ])
    namespace["run_agent"](project, agent)
    out = capsys.readouterr().out
    # The first /undo took back turn 2's edits; turn 3's undo point (the files the undo left)
    # kept the redo stack, so its /redo brought turn 2's edits back for real.
    assert seen == [{"a.txt": "1"}, {"a.txt": "2", "b.txt": "b"}]
    assert out.count("redone;") == 1 and "nothing to redo" not in out
    # Turn 4's /undo took back its edit; turn 5 changed nothing, so its /undo went one further.
    assert files(project) == {"a.txt": "1"}
    assert out.count("undone;") == 3


def test_every_python_block_compiles():
    for block in blocks("python"):
        compile(block, str(README), "exec")


def _undostore(command: str) -> list[str]:
    """A README command line, run with this interpreter's undostore."""
    words = shlex.split(command)
    assert words[0] == "undostore"
    return [sys.executable, "-m", "undostore", *words[1:]]


def test_the_claude_code_settings_snippet_wires_the_hook_and_the_status_line(tree_factory):
    (settings,) = [json.loads(b) for b in blocks("json") if "hooks" in b]
    (entry,) = settings["hooks"]["UserPromptSubmit"]
    (hook,) = entry["hooks"]
    assert hook == {"type": "command", "command": "undostore hook --host claude-code"}
    written = json.loads(hosts_init.claude_settings(None, "settings.json"))
    assert settings == written   # what `init claude-code` writes, the footer's refresh too
    root = tree_factory({"a.txt": "before"})

    def send(prompt: str) -> subprocess.CompletedProcess[str]:
        event = {"session_id": "conv-1", "transcript_path": "/t.jsonl", "cwd": str(root),
                 "hook_event_name": "UserPromptSubmit", "prompt": prompt}
        return subprocess.run(_undostore(hook["command"]), input=json.dumps(event), text=True,
                              capture_output=True, cwd=root, timeout=60)

    ran = send("rename things")
    assert (ran.returncode, ran.stdout) == (0, "")
    (root / "a.txt").write_text("after")
    status = subprocess.run(_undostore(settings["statusLine"]["command"]), text=True,
                            capture_output=True, cwd=root, timeout=60)
    assert status.stdout == "undo:1 redo:0\n"
    undo = send("/undo")   # typed in the host: done by the hook, the prompt blocked
    assert undo.returncode == 0, undo.stderr
    assert json.loads(undo.stdout)["decision"] == "block"
    assert (root / "a.txt").read_text() == "before"
    # Every host in the table has its init command.
    table = README.read_text().split("## Agent hosts", 1)[1].split("```", 1)[0]
    hosts = re.findall(r"`undostore init ([a-z-]+)`", table)
    assert sorted(set(hosts)) == ["claude-code", "codex", "codex-notify", "copilot", "cursor",
                             "gemini", "opencode", "pi", "windsurf"]


def test_the_mcp_snippet_starts_a_server_that_answers(tree_factory):
    if importlib.util.find_spec("mcp") is None:
        pytest.skip("the extra undostore[mcp] is not installed")
    (config,) = [json.loads(b) for b in blocks("json") if "mcpServers" in b]
    server = config["mcpServers"]["undostore"]
    argv = _undostore(" ".join([server["command"], *server["args"]]))
    root = tree_factory({"a.txt": "a"})
    hello = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
             "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                        "clientInfo": {"name": "readme", "version": "1"}}}
    ran = subprocess.run(argv, input=json.dumps(hello) + "\n", text=True, capture_output=True,
                         cwd=root, timeout=60)
    assert ran.returncode == 0, ran.stderr
    assert json.loads(ran.stdout.splitlines()[0])["result"]["serverInfo"]["name"] == "undostore"
