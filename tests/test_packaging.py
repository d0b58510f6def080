"""What a new user meets installing and setting up (issue 55, item 16): a build with no
deprecation warning, and every message that names an install command naming one that works for
this copy (its checkout, where it runs from one), `init` saying what of the user's it kept."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from .conftest import Cli

CHECKOUT = Path(__file__).resolve().parent.parent


@pytest.mark.skipif(sys.platform == "win32", reason="the Windows lane's Python has no pip")
def test_the_wheel_builds_without_a_deprecation_warning(tmp_path: Path):
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", "-v", "--no-deps", "-w",
                            str(tmp_path), str(CHECKOUT)], capture_output=True, text=True,
                           timeout=600)
    assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]
    said = built.stdout + built.stderr
    assert "deprecated" not in said.lower(), [line for line in said.splitlines()
                                              if "deprecat" in line.lower()]
    (wheel,) = tmp_path.glob("undostore-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert "undostore_cli/install_hint.py" in names and "undostore/snapshot/treeignore.py" in names


@pytest.mark.skipif(sys.platform == "win32", reason="a POSIX PATH without undostore")
def test_doctor_names_the_install_command_for_this_checkout(tree_factory, cli: Cli):
    root = tree_factory({"a.txt": "1"})
    env = {**os.environ, "PATH": "/usr/bin:/bin"}   # no `undostore` on it
    done = cli.run("doctor", "--json", root=root, env=env)
    (path_check,) = [c for c in json.loads(done.stdout)["checks"] if c["name"] == "path"]
    assert path_check["ok"] is False
    assert f"pipx install {CHECKOUT}" in path_check["detail"]


def test_init_says_it_kept_the_users_own_footer(tree_factory, cli: Cli):
    root = tree_factory({".claude": {"settings.json": json.dumps(
        {"statusLine": {"type": "command", "command": "~/bin/my-footer"}})}})
    done = cli.run("init", "claude-code", root=root)
    assert done.returncode in (0, 1), done.stderr
    assert "kept your statusLine ('~/bin/my-footer')" in done.stdout
    settings = json.loads((root / ".claude" / "settings.json").read_text())
    assert settings["statusLine"]["command"] == "~/bin/my-footer"
    doc = json.loads(cli.run("init", "claude-code", "--json", root=root).stdout)
    assert doc["kept"] and "kept your statusLine" in doc["kept"][0]
