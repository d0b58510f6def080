"""`undostore init HOST`: the host's config written or merged (every other key and hook kept),
idempotent, `--dry-run` and `--json`, a file it cannot parse refused and left untouched; and the
command it wires in is a working hook (run as the host would, from the PATH)."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from undostore import Workspace

from .init_support import init, shim

HOSTS = ["claude-code", "codex", "codex-notify", "copilot", "cursor", "gemini", "opencode", "pi",
         "windsurf"]


def snapshot_files(*folders: Path) -> dict[str, bytes]:
    return {str(p): p.read_bytes() for f in folders for p in sorted(f.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("host", HOSTS)
def test_init_writes_the_config_and_a_second_run_changes_nothing(tmp_path, host):
    root, home = tmp_path / "proj", tmp_path / "home"
    root.mkdir()
    home.mkdir()
    first = init(root, host, "--json", home=home)
    assert first.returncode == 0, first.stderr
    written = json.loads(first.stdout)["written"]
    assert written and all(Path(p).is_file() for p in written)
    where = home if host == "codex-notify" else root
    assert all(Path(p).is_relative_to(where) for p in written)
    before = snapshot_files(root, home)
    again = init(root, host, "--json", home=home)
    assert again.returncode == 0, again.stderr
    doc = json.loads(again.stdout)
    assert doc["written"] == [] and sorted(doc["unchanged"]) == sorted(written)
    assert snapshot_files(root, home) == before


def test_claude_code_merge_keeps_every_other_key_hook_and_the_users_status_line(tmp_path):
    root = tmp_path / "proj"
    settings = root / ".claude" / "settings.json"
    settings.parent.mkdir(parents=True)
    theirs = {"type": "command", "command": "python3 ~/lint.py"}
    old_ours = {"type": "command", "command": "undostore hook"}
    settings.write_text(json.dumps({
        "model": "opus", "permissions": {"allow": ["Bash(ls)"]},
        "statusLine": {"type": "command", "command": "my-footer"},
        "hooks": {"UserPromptSubmit": [{"hooks": [theirs]}, {"hooks": [old_ours]}],
                  "PreToolUse": [{"matcher": "Bash", "hooks": [theirs]}]}}))
    assert init(root, "claude-code").returncode == 0
    doc = json.loads(settings.read_text())
    assert doc["model"] == "opus" and doc["permissions"] == {"allow": ["Bash(ls)"]}
    assert doc["statusLine"] == {"type": "command", "command": "my-footer"}
    ours = {"hooks": [{"type": "command", "command": "undostore hook --host claude-code"}]}
    assert doc["hooks"]["PreToolUse"] == [{"matcher": "Bash", "hooks": [theirs]}, ours]
    assert doc["hooks"]["UserPromptSubmit"] == [{"hooks": [theirs]}, ours]  # replaced, not doubled
    assert doc["hooks"]["Stop"] == [ours]
    # every tool call, failed ones too: a turn is its calls' changes
    assert doc["hooks"]["PostToolUse"] == doc["hooks"]["PostToolUseFailure"] == [ours]
    assert (root / ".claude" / "commands" / "undo.md").read_text().startswith("---\n")
    for name in ("undo.md", "redo.md"):   # never a skill the model may invoke itself
        front = (root / ".claude" / "commands" / name).read_text().split("---")[1]
        assert "\ndisable-model-invocation: true\n" in front, front
    assert "/redo" not in (root / ".claude" / "commands" / "redo.md").read_text().split("---")[1]


def test_claude_code_sets_the_status_line_when_there_is_none(tmp_path):
    assert init(tmp_path, "claude-code").returncode == 0
    settings = tmp_path / ".claude" / "settings.json"
    doc = json.loads(settings.read_text())
    assert doc["statusLine"] == {"type": "command", "command": "undostore status",
                                 "refreshInterval": 5}


def test_claude_code_adds_a_refresh_to_its_old_status_line_and_keeps_the_users(tmp_path):
    """A footer undostore wrote before it had a refresh interval gets one (a blocked `/undo`
    would leave it stale); an interval the user chose stays."""
    settings = tmp_path / ".claude" / "settings.json"
    settings.parent.mkdir()
    for before, after in [({"type": "command", "command": "undostore status"}, 5),
                          ({"type": "command", "command": "undostore status",
                            "refreshInterval": 30}, 30)]:
        settings.write_text(json.dumps({"statusLine": before}))
        assert init(tmp_path, "claude-code").returncode == 0
        assert json.loads(settings.read_text())["statusLine"]["refreshInterval"] == after


@pytest.mark.parametrize("host, path, events", [
    ("cursor", ".cursor/hooks.json", ["beforeSubmitPrompt", "stop", "preToolUse", "postToolUse",
                                      "postToolUseFailure"]),
    ("gemini", ".gemini/settings.json", ["BeforeAgent", "AfterAgent", "BeforeTool",
                                         "AfterTool"]),
    ("codex", ".codex/hooks.json", ["UserPromptSubmit", "Stop", "PreToolUse", "PostToolUse"]),
    ("windsurf", ".windsurf/hooks.json", ["pre_user_prompt", "post_cascade_response",
                                          "pre_write_code", "post_write_code",
                                          "pre_run_command", "post_run_command",
                                          "pre_mcp_tool_use", "post_mcp_tool_use"]),
    ("copilot", ".github/hooks/undostore.json", ["userPromptSubmitted", "agentStop",
                                                 "preToolUse", "postToolUse",
                                                 "postToolUseFailure"]),
])
def test_json_configs_keep_other_hooks_and_keys(tmp_path, host, path, events):
    config = tmp_path / path
    config.parent.mkdir(parents=True)
    other = {"command": "./audit.sh"}
    config.write_text(json.dumps({"version": 1, "ui": {"theme": "dark"},
                                  "hooks": {events[0]: [other], "afterFileEdit": [other]}}))
    assert init(tmp_path, host).returncode == 0
    doc = json.loads(config.read_text())
    assert doc["ui"] == {"theme": "dark"} and doc["hooks"]["afterFileEdit"] == [other]
    assert doc["hooks"][events[0]][0] == other and len(doc["hooks"][events[0]]) == 2
    assert all("undostore hook --host" in json.dumps(doc["hooks"][e][-1]) for e in events)


@pytest.mark.parametrize("host, path", [("claude-code", ".claude/settings.json"),
                                        ("cursor", ".cursor/hooks.json"),
                                        ("gemini", ".gemini/settings.json")])
def test_a_file_that_cannot_be_parsed_is_refused_naming_it_and_left_untouched(tmp_path, host,
                                                                              path):
    config = tmp_path / path
    config.parent.mkdir(parents=True)
    config.write_bytes(b'{"hooks": {,}\n')
    result = init(tmp_path, host, "--json")
    assert result.returncode == 1
    assert str(config) in result.stderr and "cannot parse" in result.stderr
    assert json.loads(result.stdout)["error"]["path"] == str(config)
    assert config.read_bytes() == b'{"hooks": {,}\n'
    assert not (tmp_path / ".claude" / "commands").exists()  # nothing else was written either


def test_dry_run_prints_the_files_and_writes_nothing(tmp_path):
    result = init(tmp_path, "cursor", "--dry-run")
    assert result.returncode == 0, result.stderr
    assert "would write" in result.stdout and '"beforeSubmitPrompt"' in result.stdout
    assert not (tmp_path / ".cursor").exists()
    doc = json.loads(init(tmp_path, "pi", "--dry-run", "--json").stdout)
    assert doc["written"] == [] and "pi.on(" in doc["would_write"][0]["content"]


def test_global_writes_under_the_home_folder(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    result = init(tmp_path / "proj", "gemini", "--global", "--json", home=home)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["written"] == [
        str(home / ".gemini" / name) for name in ("settings.json", "commands/undo.toml",
                                                  "commands/redo.toml")]


def test_codex_notify_goes_before_the_first_table_and_refuses_another_program(tmp_path):
    home = tmp_path / "home"
    config = home / ".codex" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text('model = "o3"\n\n[mcp_servers.x]\ncommand = "x"\n')
    assert init(tmp_path, "codex-notify", home=home).returncode == 0
    tomllib = pytest.importorskip("tomllib")
    doc = tomllib.loads(config.read_text())
    assert doc == {"model": "o3", "notify": ["undostore", "hook", "--host", "codex-notify"],
                   "mcp_servers": {"x": {"command": "x"}}}
    config.write_text('notify = ["terminal-notifier"]\n')
    result = init(tmp_path, "codex-notify", home=home)
    assert result.returncode == 1 and "terminal-notifier" in result.stderr
    assert config.read_text() == 'notify = ["terminal-notifier"]\n'


@pytest.mark.skipif(sys.platform == "win32", reason="a POSIX shell script stands in for the "
                                                    "installed undostore")
@pytest.mark.parametrize("host, path", [("claude-code", ".claude/settings.json"),
                                        ("cursor", ".cursor/hooks.json")])
def test_the_wired_command_run_from_the_path_records_a_point(tmp_path, host, path):
    root = tmp_path / "proj"
    root.mkdir()
    (root / "a.txt").write_text("1")
    assert init(root, host).returncode == 0
    hooks = json.loads((root / path).read_text())["hooks"]
    prompt_event = "UserPromptSubmit" if host == "claude-code" else "beforeSubmitPrompt"
    entry = hooks[prompt_event][-1]
    line = entry["hooks"][0]["command"] if "hooks" in entry else entry["command"]
    bin_dir = shim(tmp_path)
    event = ({"session_id": "s1", "cwd": str(root), "hook_event_name": prompt_event,
              "prompt": "go"} if host == "claude-code" else
             {"conversation_id": "s1", "workspace_roots": [str(root)],
              "hook_event_name": prompt_event, "prompt": "go"})
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}
    result = subprocess.run(shlex.split(line), input=json.dumps(event), text=True,
                            capture_output=True, env=env, cwd=root, timeout=60)
    assert result.returncode == 0, result.stderr
    with Workspace(root) as ws:
        assert [p.label for p in ws.log("s1").undo] == ["go"]


def test_every_host_has_its_event_record_and_its_setup_record():
    """A host is its two records: how its events read (hosts/records.py) and what `init`
    writes and `doctor` checks for it (hosts/setup.py)."""
    from undostore_cli.hosts.records import HOSTS
    from undostore_cli.hosts.setup import SETUP

    assert sorted(HOSTS) == sorted(SETUP)
    assert sorted(h for h, s in SETUP.items() if s.trust is not None) == ["codex", "copilot",
                                                                        "gemini"]
