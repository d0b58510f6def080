"""`undostore doctor [HOST]` and what `init` now does after writing the config (issue 46): each
check one line with the step still needed, exit 1 when one fails; the host's trust state read
from its own files (Codex's project trust in config.toml, Gemini's trustedFolders.json); when
its hooks last fired here; `init` takes the first snapshot and prints the checks."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest


def _launcher(folder: Path) -> Path:
    """A folder holding an `undostore` command that runs this checkout (as `pipx install`
    would put one on the PATH; the Windows lane installs none)."""
    folder.mkdir(parents=True, exist_ok=True)
    if sys.platform == "win32":
        (folder / "undostore.cmd").write_text(f'@"{sys.executable}" -m undostore %*\r\n')
    else:
        script = folder / "undostore"
        script.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m undostore "$@"\n')
        script.chmod(0o755)
    return folder


def _env(home: Path, **extra: str) -> dict[str, str]:
    env = {**os.environ, "HOME": str(home), "USERPROFILE": str(home), **extra}
    env.pop("CODEX_HOME", None)
    env.pop("GEMINI_CLI_TRUST_WORKSPACE", None)
    # `undostore` on the PATH, as hosts find it.
    env["PATH"] = str(_launcher(home.parent / "bin")) + os.pathsep + env.get("PATH", "")
    return env


def _doctor(cli, root: Path, env: dict[str, str], *args: str) -> tuple[int, dict]:  # noqa: ANN001
    done = cli.run("doctor", *args, "--json", cwd=root, env=env)
    return done.returncode, json.loads(done.stdout)


def _checks(doc: dict) -> dict[str, tuple[bool, str]]:
    return {c["name"]: (c["ok"], c["detail"]) for c in doc["checks"]}


def test_a_folder_with_no_host_wired_fails_naming_init(tree_factory, cli, tmp_path):
    root = tree_factory({"a.txt": "a"})
    code, doc = _doctor(cli, root, _env(tmp_path / "home"))
    assert code == 1 and doc["ok"] is False
    ok, detail = _checks(doc)["hosts"]
    assert not ok and "undostore init HOST" in detail
    assert not (Path(os.environ["UNDOSTORE_HOME"]) / "stores").exists()   # it made no store


def test_claude_code_wired_then_its_hook_fired(tree_factory, cli, tmp_path):
    root = tree_factory({"a.txt": "a"})
    env = _env(tmp_path / "home")
    init = cli.run("init", "claude-code", cwd=root, env=env)
    assert init.returncode == 0, init.stderr
    assert "wrote" in init.stdout and "claude-code: config: wired in" in init.stdout
    assert "FAIL  claude-code: hooks fired" in init.stdout   # no prompt yet: the step is named
    code, doc = _doctor(cli, root, env)
    checks = _checks(doc)
    assert code == 1 and checks["path"][0] and checks["claude-code: config"][0]
    assert "send a prompt in claude-code" in checks["claude-code: hooks fired"][1]
    event = {"session_id": "s", "cwd": str(root), "hook_event_name": "UserPromptSubmit",
             "prompt": "hello", "prompt_id": "p1"}
    hooked = cli.run("hook", cwd=root, env=env, input=json.dumps(event))
    assert hooked.returncode == 0, hooked.stderr
    code, doc = _doctor(cli, root, env, "claude-code")
    assert code == 0 and doc["ok"], doc
    assert _checks(doc)["claude-code: hooks fired"][1].startswith("last ")
    plain = cli.run("doctor", cwd=root, env=env)
    assert plain.returncode == 0 and plain.stdout.startswith("ok    path: undostore is ")


def test_a_footer_an_older_init_wrote_is_named_and_init_brings_it_up_to_date(tree_factory,
                                                                              cli, tmp_path):
    """Claude Code's settings as `init` wrote them before the footer's refresh interval (a
    blocked `/undo` left that footer stale): doctor fails the config check naming `init`,
    which rewrites the footer and keeps the rest."""
    root = tree_factory({"a.txt": "a"})
    env = _env(tmp_path / "home")
    ours = {"hooks": [{"type": "command", "command": "undostore hook --host claude-code"}]}
    settings = root / ".claude" / "settings.json"
    settings.parent.mkdir()
    settings.write_text(json.dumps({"model": "opus", "hooks": {"UserPromptSubmit": [ours],
                                                              "Stop": [ours]},
                                    "statusLine": {"type": "command",
                                                   "command": "undostore status"}}))
    _, doc = _doctor(cli, root, env, "claude-code")
    ok, detail = _checks(doc)["claude-code: config"]
    assert not ok and "run `undostore init claude-code`" in detail, detail
    # ... and asks for no tool call: the user is told what that costs them
    ok, detail = _checks(doc)["claude-code: tool calls"]
    assert not ok and "your own edits and other conversations' work" in detail, detail
    assert "run `undostore init claude-code` again" in detail, detail
    assert cli.run("init", "claude-code", cwd=root, env=env).returncode == 0
    written = json.loads(settings.read_text())
    assert written["model"] == "opus" and written["statusLine"]["refreshInterval"] == 5
    _, doc = _doctor(cli, root, env, "claude-code")
    assert _checks(doc)["claude-code: config"][0]
    assert _checks(doc)["claude-code: tool calls"][0]


def test_a_host_that_reports_no_tool_call_is_named_with_what_it_means(tree_factory, cli,
                                                                     tmp_path):
    root = tree_factory({"a.txt": "a"})
    env = _env(tmp_path / "home")
    assert cli.run("init", "codex-notify", cwd=root, env=env).returncode == 0
    _, doc = _doctor(cli, root, env, "codex-notify")
    ok, detail = _checks(doc)["codex-notify: tool calls"]
    assert ok and "tells a hook of no tool call" in detail, detail
    assert "takes back your own edits and other conversations' work" in detail, detail


def test_init_takes_the_first_snapshot(tree_factory, cli, tmp_path):
    root = tree_factory({"a.txt": "a", "b.txt": "b"})
    done = cli.run("init", "cursor", "--json", cwd=root, env=_env(tmp_path / "home"))
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    assert doc["first_snapshot"]["files"] == 3   # a.txt, b.txt and .cursor/hooks.json
    again = json.loads(cli.run("init", "cursor", "--json", cwd=root,
                               env=_env(tmp_path / "home")).stdout)
    assert again["first_snapshot"] is None and again["written"] == []


@pytest.mark.parametrize("trusted, reviewed", [(False, False), (True, False), (True, True)])
def test_codex_trust_and_hook_review_are_read_from_its_config(tree_factory, cli, tmp_path,
                                                              trusted, reviewed):
    """Codex runs a project's hooks once the project is trusted and each hook was reviewed in
    its /hooks screen, which records `[hooks.state."<hooks.json>:<event>:<i>:<j>"]
    trusted_hash` in the user's config (as the real Codex does: tests/test_host_codex.py)."""
    root = tree_factory({"a.txt": "a"})
    home = tmp_path / "home"
    env = _env(home)
    assert cli.run("init", "codex", cwd=root, env=env).returncode == 0
    config = 'model = "m"\n'
    if trusted:
        config += f'\n[projects.{json.dumps(str(root))}]\ntrust_level = "trusted"\n'
    if reviewed:
        hooks = root / ".codex" / "hooks.json"
        for event in ("user_prompt_submit", "stop", "pre_tool_use", "post_tool_use"):
            config += (f'\n[hooks.state.{json.dumps(f"{hooks}:{event}:0:0")}]\n'
                       f'trusted_hash = "sha256:00"\n')
    (home / ".codex").mkdir(parents=True, exist_ok=True)
    (home / ".codex" / "config.toml").write_text(config)
    ok, detail = _checks(_doctor(cli, root, env, "codex")[1])["codex: trust"]
    assert ok is (trusted and reviewed), detail
    assert ("/hooks" in detail) is not reviewed, detail


@pytest.mark.parametrize("rule, trusted", [(None, False), ("TRUST_FOLDER", True),
                                           ("TRUST_PARENT", True), ("DO_NOT_TRUST", False)])
def test_gemini_trusted_folders_are_read(tree_factory, cli, tmp_path, rule, trusted):
    root = tree_factory({"a.txt": "a"})
    home = tmp_path / "home"
    env = _env(home)
    assert cli.run("init", "gemini", cwd=root, env=env).returncode == 0
    if rule is not None:
        (home / ".gemini").mkdir(parents=True, exist_ok=True)
        named = root / "sub" if rule == "TRUST_PARENT" else root
        (home / ".gemini" / "trustedFolders.json").write_text(json.dumps({str(named): rule}))
    ok, detail = _checks(_doctor(cli, root, env, "gemini")[1])["gemini: trust"]
    assert ok is trusted, detail
    if not trusted:
        assert "trustedFolders.json" in detail


@pytest.mark.skipif(sys.platform == "win32", reason="a POSIX launcher script")
def test_a_launcher_an_old_pip_wrote_is_named_with_its_cost(tree_factory, cli, tmp_path):
    """pip before 24.1 writes console scripts that import `re` (~5 ms on each hook call);
    newer pips and uv do not."""
    root = tree_factory({"a.txt": "a"})
    env = _env(tmp_path / "home")
    script = tmp_path / "old" / "undostore"
    script.parent.mkdir()
    script.write_text(f"#!{sys.executable}\n# -*- coding: utf-8 -*-\nimport re\nimport sys\n"
                      "from undostore_cli.entry import main\nif __name__ == '__main__':\n"
                      "    sys.argv[0] = re.sub(r'(-script\\.pyw|\\.exe)?$', '', sys.argv[0])\n"
                      "    sys.exit(main())\n")
    script.chmod(0o755)
    _, doc = _doctor(cli, root, env)
    ok, detail = _checks(doc)["path"]
    assert ok and "imports `re`" not in detail
    _, doc = _doctor(cli, root, {**env, "PATH": str(script.parent) + os.pathsep + env["PATH"]})
    ok, detail = _checks(doc)["path"]
    assert ok and detail.startswith(f"undostore is {script}") and "imports `re`" in detail
