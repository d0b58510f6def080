"""Real terminals for tests: a pseudo-terminal run (output and all), and a tmux pane a test
types into (send-keys) and reads (capture-pane), as a person at an 80x24 terminal would.

Each tmux session runs on its own socket under the test's temporary folder, with no config
file, and is killed when the test ends. Waits poll the screen until the text is there (or fail
after `timeout` seconds), so the tests do not depend on how fast the machine is.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

needs_tmux = pytest.mark.skipif(shutil.which("tmux") is None or sys.platform == "win32",
                                reason="tmux is not installed (the Windows lane has none)")
needs_pty = pytest.mark.skipif(sys.platform == "win32", reason="needs a POSIX pseudo-terminal")

UNDOSTORE = [sys.executable, "-m", "undostore"]


def under_a_terminal(args: list[str], cwd: Path, env: dict[str, str]) -> tuple[int, bytes]:
    """(exit code, what reached the terminal) of `undostore args` with stdin, stdout and stderr
    on a new pseudo-terminal."""
    leader, follower = os.openpty()
    proc = subprocess.Popen([*UNDOSTORE, *args], cwd=cwd, env={**os.environ, **env},
                            stdin=follower, stdout=follower, stderr=follower)
    os.close(follower)
    chunks = []
    try:
        while True:
            try:
                chunk = os.read(leader, 65536)
            except OSError:
                break
            if not chunk:
                break
            chunks.append(chunk)
        code = proc.wait(timeout=60)
    finally:
        os.close(leader)
    return code, b"".join(chunks)


class Tmux:
    """One tmux session of `columns` x `rows` running one command, then a line `[exit N]`."""

    def __init__(self, folder: Path, columns: int = 80, rows: int = 24) -> None:
        self.socket = str(folder / "tmux.sock")
        self.folder, self.columns, self.rows = folder, columns, rows

    def _tmux(self, *args: str) -> str:
        done = subprocess.run(["tmux", "-S", self.socket, "-f", os.devnull, *args],
                              capture_output=True, text=True, timeout=30)
        assert done.returncode == 0, done.stderr
        return done.stdout

    def start(self, args: list[str], cwd: Path, env: dict[str, str | None] | None = None,
              program: list[str] = UNDOSTORE, inherit: bool = True) -> None:
        """Run `undostore args` (or `program args`: an agent host) in the pane, with `env` on
        top of this process's (None: unset), or with `env` alone when not `inherit` (an agent
        host must not see the CI's variables: Gemini CLI starts headless when CI=true)."""
        script = self.folder / "pane.sh"
        if inherit:
            exports = "".join(f"unset {k}\n" if v is None else f"export {k}={shlex.quote(v)}\n"
                              for k, v in (env or {}).items())
            prefix: list[str] = []
        else:
            exports = ""
            prefix = ["env", "-i", *(f"{k}={v}" for k, v in (env or {}).items() if v is not None)]
        command = " ".join(shlex.quote(a) for a in [*prefix, *program, *args])
        script.write_text(f"{exports}cd {shlex.quote(str(cwd))}\n{command}\n"
                          'echo "[exit $?]"\nexec sleep 600\n')
        self._tmux("new-session", "-d", "-x", str(self.columns), "-y", str(self.rows),
                   "sh", str(script))

    def screen(self, colours: bool = False) -> str:
        return self._tmux("capture-pane", "-p", *(["-e"] if colours else []))

    def wait_for(self, text: str, timeout: float = 30, colours: bool = False) -> str:
        deadline = time.monotonic() + timeout
        while True:
            screen = self.screen(colours)
            if text in screen:
                return screen
            if time.monotonic() > deadline:
                raise AssertionError(f"{text!r} never appeared; the screen:\n{screen}")
            time.sleep(0.05)

    def wait_gone(self, text: str, timeout: float = 30) -> str:
        """The screen once `text` is no longer on it."""
        deadline = time.monotonic() + timeout
        while True:
            screen = self.screen()
            if text not in screen:
                return screen
            if time.monotonic() > deadline:
                raise AssertionError(f"{text!r} never went; the screen:\n{screen}")
            time.sleep(0.05)

    def send(self, *keys: str) -> None:
        self._tmux("send-keys", *keys)

    def close(self) -> None:
        subprocess.run(["tmux", "-S", self.socket, "kill-server"], capture_output=True,
                       timeout=30)

