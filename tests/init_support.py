"""`undostore init` as a child process, and an `undostore` program on a PATH, for the init
suites."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from .conftest import Cli


def init(root: Path, *args: str, home: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    if home is not None:
        env["HOME"] = env["USERPROFILE"] = str(home)
    return Cli().run("init", *args, root=root, env=env)


def shim(folder: Path) -> Path:
    """A folder with an `undostore` program that runs this checkout (what `pipx install .`
    puts on the PATH)."""
    bin_dir = folder / "bin"
    bin_dir.mkdir(exist_ok=True)
    program = bin_dir / "undostore"
    program.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m undostore "$@"\n')
    program.chmod(0o755)
    return bin_dir
