"""Conventions every command keeps: --json on either side of the command name, one error
format, NO_COLOR, help for every command and option, shell completion of sessions and ids."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from undostore import Workspace


def run(*args: str, cwd: Path | None = None, env: dict[str, str] | None = None
        ) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "undostore", *args], capture_output=True,
                          text=True, cwd=cwd, timeout=60, env={**os.environ, **(env or {})})


@pytest.fixture
def root(tree_factory) -> Path:
    root = tree_factory({"a.txt": "1\n"})
    with Workspace(root) as ws:
        ws.snapshot(session="agent", label="first")
    (root / "a.txt").write_text("2\n")
    return root


@pytest.mark.parametrize("args", [["status"], ["log", "--session", "agent"], ["sessions"],
                                  ["snapshot"]])
def test_json_before_or_after_the_command_name_gives_the_same_object(root, args):
    after = run(*args, "--json", cwd=root)
    before = run("--json", *args, cwd=root)
    around = run("--root", str(root), "--json", *args)
    for result in (after, before, around):
        assert result.returncode == 0, result.stderr
    varying = ("seconds", "hashed", "new_objects", "new_bytes", "last_point_age_seconds")

    def strip(d: dict) -> dict:
        return {k: v for k, v in d.items() if k not in varying}

    assert strip(json.loads(before.stdout)) == strip(json.loads(after.stdout))
    assert strip(json.loads(around.stdout)) == strip(json.loads(after.stdout))


def test_json_before_the_command_reports_errors_as_one_object(root):
    result = run("--json", "drop", "--session", "nobody", cwd=root)
    assert result.returncode == 2
    assert json.loads(result.stdout)["error"]["message"].startswith("no session named")


def test_drop_of_an_unknown_session_exits_2_and_names_it(root):
    result = run("drop", "--session", "nobody", cwd=root)
    assert (result.returncode, result.stdout) == (2, "")
    assert result.stderr == "undostore: error: no session named 'nobody' (sessions: 'agent')\n"
    assert run("drop", "--session", "agent", cwd=root).returncode == 0


def test_drop_needs_a_named_session_and_its_help_says_so(root):
    """drop never picks the session with the newest point, as the history commands do."""
    refused = run("drop", cwd=root, env={"UNDOSTORE_SESSION": ""})
    assert refused.returncode == 2 and "drop needs --session NAME" in refused.stderr
    helped = run("drop", "--help", cwd=root).stdout
    assert "required" in helped and "last acted on" not in helped


@pytest.mark.parametrize("args, says", [
    (["no-such-command"], "No such command 'no-such-command'"),
    (["snapshot", "--no-such-option"], "No such option '--no-such-option'"),
    (["restore", "a", "b", "c"], "unexpected extra argument"),
    (["gc", "--grace", "soon"], "'soon' is not a valid float"),
])
def test_click_usage_errors_use_the_one_error_format(root, args, says):
    result = run(*args, cwd=root)
    assert (result.returncode, result.stdout) == (2, "")
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("undostore: error: "), lines
    assert says in lines[0]
    assert "--help" in lines[0]


def _under_a_terminal(args: list[str], cwd: Path, env: dict[str, str]) -> bytes:
    """stdout of the command with a pseudo-terminal as stdout (where colour is 'auto'-on)."""
    import pty

    leader, follower = pty.openpty()
    try:
        proc = subprocess.Popen([sys.executable, "-m", "undostore", *args], cwd=cwd,
                                stdout=follower, stderr=subprocess.DEVNULL,
                                env={**os.environ, "TERM": "xterm", **env})
        os.close(follower)
        chunks = []
        while True:
            try:
                chunk = os.read(leader, 65536)
            except OSError:
                break
            if not chunk:
                break
            chunks.append(chunk)
        proc.wait(timeout=60)
    finally:
        os.close(leader)
    return b"".join(chunks)


@pytest.mark.skipif(sys.platform == "win32", reason="needs a POSIX pseudo-terminal")
def test_no_color_turns_colour_off_on_a_terminal(root):
    with Workspace(root) as ws:
        first = ws.log("agent").undo[0].id
    env_without = {k: "" for k in ("NO_COLOR",)}
    coloured = _under_a_terminal(["diff", "--no-pager", "--patch", first], root, env_without)
    plain = _under_a_terminal(["diff", "--no-pager", "--patch", first], root, {"NO_COLOR": "1"})
    assert b"\x1b[" in coloured
    assert b"\x1b[" not in plain and b"+2" in plain


def test_every_command_and_every_option_has_help_text():
    from undostore_cli.main import all_commands

    missing = []
    for name, command in sorted(all_commands().items()):
        if not (command.help or "").strip():
            missing.append(name)
        for param in command.params:
            if isinstance(param, __import__("click").Option) and not param.hidden \
                    and not (param.help or "").strip():
                missing.append(f"{name} {param.opts[0]}")
    assert missing == []


def _complete(args: str, cwd: Path) -> list[str]:
    words = f"undostore {args}"
    result = run(cwd=cwd, env={"_UNDOSTORE_COMPLETE": "bash_complete", "COMP_WORDS": words,
                               "COMP_CWORD": str(len(words.split(" ")) - 1)})
    assert result.returncode == 0, result.stderr
    return [line.split(",", 1)[1] for line in result.stdout.splitlines() if line]


def test_completion_offers_session_names_and_snapshot_ids(root):
    with Workspace(root) as ws:
        ws.snapshot(session="other")
        first = ws.log("agent").undo[0].id
    assert _complete("undo --session ", root) == ["agent", "other"]
    assert _complete("log --session ag", root) == ["agent"]
    assert first[:12] in _complete("restore ", root)
    assert _complete(f"diff {first[:6]}", root) == [first[:12]]


def test_completion_in_a_folder_never_protected_creates_no_store(tmp_path):
    folder = tmp_path / "plain"
    folder.mkdir()
    assert _complete("undo --session ", folder) == []
    stores = Path(os.environ["UNDOSTORE_HOME"]) / "stores"
    assert not stores.exists() or list(stores.iterdir()) == []


def test_the_windows_lane_starts_a_child_again_after_wines_internal_error(monkeypatch):
    """conftest.RetryingPopen (installed in the Windows lane): CreateProcess failing with
    ERROR_INTERNAL_ERROR (1359) before the child exists is tried again; any other error is not."""
    from .conftest import RetryingPopen

    failures = [1359, 1359]
    original = subprocess.Popen._execute_child

    def flaky(self, *args, **kwargs):
        if failures:
            err = OSError(22, "Internal error")
            err.winerror = failures.pop()  # type: ignore[attr-defined]
            raise err
        return original(self, *args, **kwargs)

    monkeypatch.setattr(subprocess.Popen, "_execute_child", flaky)
    proc = RetryingPopen([sys.executable, "-c", "print('child ran')"], stdout=subprocess.PIPE,
                         text=True)
    assert proc.communicate()[0] == "child ran\n" and failures == []
    failures[:] = [5]   # ERROR_ACCESS_DENIED: raised at once
    with pytest.raises(OSError):
        RetryingPopen([sys.executable, "-c", "pass"])
    assert failures == []
