"""The `undostore` command as a program: output shapes, help texts, entry points, lazy imports.

Everything runs in real child processes (`python -m undostore ...`), as users and scripts run it.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import undostore
from undostore import Workspace

HEX40 = re.compile(r"^[0-9a-f]{40}$")


def registered_commands() -> list[str]:
    from undostore_cli.main import all_commands

    return sorted(all_commands())


@pytest.fixture
def root(tree_factory) -> Path:
    return tree_factory({"a.txt": "a", "sub": {"b.txt": "b"}, ".gitignore": "*.log\n",
                         "x.log": "ignored"})


def test_plain_output_is_one_line_with_the_id(root: Path, tmp_path: Path, cli):
    result = cli.run("--root", str(root), "--store", str(tmp_path / "s"), "snapshot")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert len(lines) == 1 and HEX40.match(lines[0])
    assert result.stdout == lines[0] + "\n"
    with Workspace(root, store=tmp_path / "s") as ws:
        assert ws.snapshot().id == lines[0]


def test_json_output_is_one_object_with_the_contract_keys(root: Path, tmp_path: Path, cli):
    result = cli.run("--root", str(root), "--store", str(tmp_path / "s"), "snapshot", "--json")
    assert result.returncode == 0, result.stderr
    assert len(result.stdout.splitlines()) == 1
    payload = json.loads(result.stdout)
    assert isinstance(payload, dict)
    assert {"id", "files", "hashed", "seconds"} <= set(payload)
    assert HEX40.match(payload["id"])
    assert (payload["files"], payload["hashed"]) == (3, 3)
    assert isinstance(payload["seconds"], (int, float)) and payload["seconds"] >= 0
    again = json.loads(cli.run("--root", str(root), "--store", str(tmp_path / "s"), "snapshot",
                               "--json").stdout)
    assert again["id"] == payload["id"] and again["files"] == 3


def test_root_defaults_to_the_current_folder(root: Path, cli):
    from_cwd = cli.run("snapshot", cwd=root)
    explicit = cli.run("--root", str(root), "snapshot")
    assert from_cwd.returncode == explicit.returncode == 0, from_cwd.stderr + explicit.stderr
    assert from_cwd.stdout == explicit.stdout


def test_default_store_is_private_under_undostore_home(root: Path, cli):
    assert cli.run("--root", str(root), "snapshot").returncode == 0
    stores = Path(os.environ["UNDOSTORE_HOME"]) / "stores"
    (store,) = stores.iterdir()
    assert store.name == hashlib.sha256(os.fsencode(os.path.realpath(root))).hexdigest()[:16]
    if sys.platform != "win32":
        assert store.stat().st_mode & 0o777 == 0o700


def test_label_without_session_is_a_usage_error_that_creates_no_store(root: Path,
                                                                      tmp_path: Path, cli):
    store = tmp_path / "s"
    result = cli.run("--root", str(root), "--store", str(store), "snapshot", "--label", "x")
    assert (result.returncode, result.stdout) == (2, "")
    assert "--session" in result.stderr
    assert not store.exists(), "a usage error leaves no store behind"


def test_every_command_has_help_text(cli):
    top = cli.run("--help")
    assert top.returncode == 0 and "Usage:" in top.stdout
    commands = registered_commands()
    assert "snapshot" in commands
    for name in commands:
        result = cli.run(name, "--help")
        assert result.returncode == 0, f"{name} --help: {result.stderr}"
        assert f"Usage: undostore {name}" in result.stdout
        text = result.stdout.split("\n\n", 2)
        assert len(text) >= 2 and text[1].strip(), f"{name} has no description"
        assert name in top.stdout


def test_version_through_python_dash_m(cli):
    """The version is the package's own (undostore.__version__, also what pyproject.toml
    installs), so a checkout that is not installed (the Windows lane) says it too."""
    result = cli.run("--version")
    assert result.returncode == 0, result.stderr
    assert result.stdout.split()[-1] == undostore.__version__


def test_import_undostore_does_not_import_click(root: Path, tmp_path: Path):
    script = (
        "import sys\n"
        "import undostore\n"
        "assert 'click' not in sys.modules, 'import undostore pulled in click'\n"
        "from undostore import Workspace\n"
        f"with Workspace({str(root)!r}, store={str(tmp_path / 's')!r}) as ws:\n"
        "    ws.snapshot(); ws.snapshot()\n"
        "assert 'click' not in sys.modules, 'a library snapshot pulled in click'\n"
        "print('ok')\n"
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                            timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout == "ok\n"


def test_unknown_command_and_option_are_usage_errors(root: Path, cli):
    for args in (["no-such-command"], ["snapshot", "--no-such-option"]):
        result = cli.run("--root", str(root), *args)
        assert (result.returncode, result.stdout) == (2, ""), args
        assert result.stderr.startswith("undostore: error: "), result.stderr
