"""The pager of `diff`, `show` and `log`, as git's: on a terminal only, `UNDOSTORE_PAGER`, else
`PAGER`, else `less -FRX`; `--no-pager`; never when stdout is a pipe.

The pagers here are shell commands that write what they were given to a file, so the test
sees exactly what went through the pager and what reached the terminal; one test drives the
real `less` in a tmux pane.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from undostore import Workspace

from .terminal_support import UNDOSTORE, Tmux, needs_pty, needs_tmux, under_a_terminal

ANSI = re.compile(rb"\x1b\[[0-9;?]*[a-zA-Z]")


@pytest.fixture
def tmux(tmp_path: Path):
    session = Tmux(tmp_path)
    yield session
    session.close()


@pytest.fixture
def root(tree_factory) -> Path:
    root = tree_factory({"a.txt": "".join(f"line {i}\n" for i in range(60))})
    with Workspace(root) as ws:
        ws.snapshot(session="s", label="make it longer")
    (root / "a.txt").write_text("".join(f"line {i * 3}\n" for i in range(80)))
    return root


def _recorder(folder: Path, name: str = "paged") -> str:
    """A pager that keeps its input and the LESS it was given."""
    return f'echo "$LESS" > {folder}/{name}.less; cat > {folder}/{name}.txt'


def _piped(root: Path, *args: str) -> bytes:
    return subprocess.run([*UNDOSTORE, *args], cwd=root, capture_output=True, timeout=60,
                          check=True).stdout


def _first_id(root: Path) -> str:
    with Workspace(root) as ws:
        return ws.log("s").undo[0].id


@needs_pty
@pytest.mark.parametrize("args", [["diff", "--patch"], ["show", "--patch"], ["log", "--stat"]])
def test_on_a_terminal_the_output_goes_through_the_pager(root, tmp_path, args):
    args = [*args, _first_id(root)] if args[0] == "diff" else [*args, "-s", "s"]
    env = {"UNDOSTORE_PAGER": _recorder(tmp_path), "PAGER": "false", "LESS": ""}
    code, screen = under_a_terminal(args, root, env)
    assert code == 0, screen
    paged = (tmp_path / "paged.txt").read_bytes()
    assert b"a.txt" not in screen and b"a.txt" in paged
    # Coloured as on the terminal, and otherwise what a pipe gets.
    assert ANSI.sub(b"", paged) == _piped(root, *args)
    assert args[0] == "log" or b"\x1b[32m" in paged
    del env["LESS"]                 # unset: given FRX, as git does
    under_a_terminal(args, root, env)
    assert (tmp_path / "paged.less").read_text() == "FRX\n"


@needs_pty
def test_pager_order_and_the_ways_to_have_none(root, tmp_path):
    first = _first_id(root)
    args = ["diff", "--patch", first]
    under_a_terminal(args, root, {"PAGER": _recorder(tmp_path, "pager")})
    assert b"line 3" in (tmp_path / "pager.txt").read_bytes(), "$PAGER when no UNDOSTORE_PAGER"
    under_a_terminal(args, root, {"PAGER": _recorder(tmp_path, "lost"),
                                  "UNDOSTORE_PAGER": _recorder(tmp_path, "ours")})
    assert (tmp_path / "ours.txt").exists() and not (tmp_path / "lost.txt").exists()
    for env, extra in (({"UNDOSTORE_PAGER": ""}, []), ({"UNDOSTORE_PAGER": "cat"}, []),
                       ({"UNDOSTORE_PAGER": _recorder(tmp_path, "never")}, ["--no-pager"])):
        code, screen = under_a_terminal([*args, *extra], root, env)
        assert code == 0 and b"line 3" in screen, env
    assert not (tmp_path / "never.txt").exists()


def test_a_pipe_never_gets_a_pager(root, tmp_path):
    env_pager = _recorder(tmp_path, "never")
    for args in (["diff", "--patch", _first_id(root)], ["show"], ["log"]):
        done = subprocess.run([*UNDOSTORE, *args], cwd=root, capture_output=True, timeout=60,
                              env={**os.environ, "UNDOSTORE_PAGER": env_pager,
                                   "PAGER": env_pager})
        assert done.returncode == 0 and done.stdout, done.stderr
    assert not (tmp_path / "never.txt").exists()


@needs_pty
def test_quitting_the_pager_early_is_a_quiet_normal_end(tree_factory, tmp_path):
    root = tree_factory({"big.txt": "".join(f"old {i}\n" for i in range(30000))})
    with Workspace(root) as ws:
        first = ws.snapshot().id
    (root / "big.txt").write_text("".join(f"new {i}\n" for i in range(30000)))
    env = {"UNDOSTORE_PAGER": f"head -c 100 > {tmp_path}/head.txt"}
    code, screen = under_a_terminal(["diff", "--patch", first], root, env)
    assert (code, screen) == (0, b"")
    assert len((tmp_path / "head.txt").read_bytes()) == 100


@needs_tmux
@pytest.mark.skipif(shutil.which("less") is None, reason="less is not installed")
def test_less_pages_a_long_diff_and_q_quits(root, tmux: Tmux):
    """No pager named: `less -FRX`, which waits at its prompt for a diff longer than the
    screen, leaves the page on the screen when q quits it (-X), and the command ends with 0."""
    first = _first_id(root)
    tmux.start(["diff", "--patch", first], root,
               {"LESS": None, "UNDOSTORE_PAGER": None, "PAGER": None})
    screen = tmux.wait_for("diff --git a/a.txt b/a.txt")
    lines = screen.splitlines()
    assert lines[-1].startswith(":"), "less waits at its prompt: the diff is longer than a screen"
    assert "[exit" not in screen
    tmux.send("q")
    screen = tmux.wait_for("[exit 0]")
    assert "@@ -1,60 +1,80 @@" in screen, "-X: the page stays on the screen"

