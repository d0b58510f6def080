"""`undostore pick`, used as a person would: an 80x24 tmux pane, keys sent, the screen read,
and the files on disk checked after each choice.
"""

from __future__ import annotations

import importlib.util
import subprocess
from pathlib import Path

import pytest

from undostore import Workspace

from .terminal_support import UNDOSTORE, Tmux, needs_pty, needs_tmux, under_a_terminal

needs_tui = pytest.mark.skipif(importlib.util.find_spec("prompt_toolkit") is None,
                               reason="the picker needs the extra undostore[tui]")


@pytest.fixture
def tmux(tmp_path: Path):
    session = Tmux(tmp_path)
    yield session
    session.close()


@pytest.fixture
def project(tree_factory) -> Path:
    """Three turns of session 'agent': each adds a file; the second also rewrites lexer.py."""
    root = tree_factory({"lexer.py": "def lex():\n    return []\n"})
    with Workspace(root) as ws:
        ws.snapshot(session="agent", label="add the parser")
        (root / "parser.py").write_text("def parse():\n    pass\n")
        ws.snapshot(session="agent", label="fix the lexer")
        (root / "lexer.py").write_text("def lex(text):\n    return text.split()\n")
        (root / "tokens.py").write_text("TOKENS = []\n")
        ws.snapshot(session="agent", label="write the tests")
        (root / "test_lexer.py").write_text("def test_lex():\n    assert lex('a b')\n")
    return root


def _files(root: Path) -> dict[str, str]:
    return {p.name: p.read_text() for p in sorted(root.iterdir()) if p.is_file()}


def _start(tmux: Tmux, root: Path) -> str:
    tmux.start(["pick", "--session", "agent"], root, {"NO_COLOR": None})
    return tmux.wait_for("q quit")


@needs_tmux
@needs_tui
def test_the_screen_lists_points_newest_first_over_a_coloured_preview(project, tmux):
    screen = _start(tmux, project)
    lines = screen.splitlines()
    assert len(lines) <= 24 and all(len(line) <= 80 for line in lines)
    assert "undostore pick" in lines[0] and "3 undo points" in lines[0]
    rows = lines[1:4]
    assert rows[0].startswith(">   1  write the tests") and rows[0].endswith("1 file")
    assert rows[1].startswith("    2  fix the lexer") and rows[1].endswith("2 files")
    assert rows[2].startswith("    3  add the parser") and "just now" in rows[2]
    assert "--- a/test_lexer.py" in screen, "the newest point's preview: its file goes"
    assert "q quit" in lines[-1]
    coloured = tmux.screen(colours=True)
    assert "\x1b[31m" in coloured, "the removed lines in git's red"
    tmux.send("Down")
    screen = tmux.wait_for(">   2  fix the lexer")
    assert "-def lex(text):" in screen and "+def lex():" in screen


@needs_tmux
@needs_tui
def test_the_preview_is_the_plan_the_users_own_edits_are_neither_shown_nor_touched(
        project, tmux):
    """Issue 59: the preview was the diff against the files now (the user's own edits among
    them) while going back does a 3-way undo of the turns' own change."""
    with Workspace(project) as ws:
        ws.end_turn("agent")   # the host's after-turn event: what follows is not the turn's
    (project / "notes.txt").write_text("the user's notes\n")           # the user, after
    (project / "tokens.py").write_text("TOKENS = ['the user']\n")      # a turn's file, edited
    screen = _start(tmux, project)
    assert "changes 1 file" in screen and "--- a/test_lexer.py" in screen
    assert "notes.txt" not in screen
    tmux.send("Down")
    screen = tmux.wait_for(">   2  fix the lexer")
    assert "conflicts with later changes" in screen and "tokens.py" in screen, screen
    tmux.send("Up", "Enter")
    screen = tmux.wait_for("[y/N]")
    assert "(1 file change)" in screen and "D  test_lexer.py" in screen
    assert "notes.txt" not in screen
    tmux.send("y")
    tmux.wait_for("[exit 0]")
    assert _files(project)["notes.txt"] == "the user's notes\n"
    assert "test_lexer.py" not in _files(project)


@needs_tmux
@needs_tui
def test_enter_shows_the_plan_n_declines_and_q_quits_changing_nothing(project, tmux):
    before = _files(project)
    _start(tmux, project)
    tmux.send("Down", "Enter")
    screen = tmux.wait_for("[y/N]")
    assert 'Go back 2 turns to before "fix the lexer"?' in screen
    assert "M  lexer.py" in screen and "D  tokens.py" in screen and "D  test_lexer.py" in screen
    tmux.send("n")
    tmux.wait_for("q quit")
    tmux.send("q")
    screen = tmux.wait_for("[exit 0]")
    assert "nothing changed" in screen
    assert _files(project) == before


@needs_tmux
@needs_tui
def test_y_goes_back_to_the_point_and_redo_brings_the_turns_back(project, tmux):
    before = _files(project)
    _start(tmux, project)
    tmux.send("Down", "Down", "Enter")
    tmux.wait_for('before "add the parser"? (4 files change) [y/N]')
    tmux.send("y")
    screen = tmux.wait_for("[exit 0]")
    assert 'undo: took back "write the tests"; "fix the lexer"; "add the parser"' in screen
    assert _files(project) == {"lexer.py": "def lex():\n    return []\n"}
    log = subprocess.run([*UNDOSTORE, "log", "-s", "agent"], cwd=project, capture_output=True,
                         text=True, timeout=60).stdout
    assert [line.split()[0] for line in log.splitlines()] == ["redo"] * 3
    for _ in range(3):
        subprocess.run([*UNDOSTORE, "redo", "-s", "agent", "--yes"], cwd=project, check=True,
                       capture_output=True, timeout=60)
    assert _files(project) == before


@needs_tmux
@needs_tui
def test_the_files_now_cannot_be_picked_and_say_why(tree_factory, tmux):
    root = tree_factory({"a.txt": "1"})
    with Workspace(root) as ws:
        ws.snapshot(session="agent", label="only")
    tmux.start(["pick", "-s", "agent"], root)
    tmux.wait_for("q quit")
    tmux.send("Enter")
    screen = tmux.wait_for("(any key: back)")
    assert "its turns changed no file" in screen
    tmux.send("x")
    tmux.wait_for("q quit")
    tmux.send("Escape")
    tmux.wait_for("[exit 0]")


def test_without_a_terminal_pick_says_so(project):
    done = subprocess.run([*UNDOSTORE, "pick", "-s", "agent"], cwd=project, capture_output=True,
                          text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert (done.returncode, done.stdout) == (2, "")
    assert "pick needs a terminal" in done.stderr and "undo --to ID" in done.stderr


@needs_pty
def test_without_the_extra_pick_says_how_to_get_it(project, tmp_path):
    """prompt_toolkit made unimportable (a package of that name that fails to import, first on
    the path): the message names the extra."""
    shadow = tmp_path / "shadow" / "prompt_toolkit"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text("raise ImportError('not installed')\n")
    code, screen = under_a_terminal(["pick", "-s", "agent"], project,
                                    {"PYTHONPATH": str(shadow.parent)})
    assert code == 1
    assert b"pick needs the terminal-UI extra (prompt_toolkit): " in screen
    assert b"-m pip install" in screen and b"[tui]'" in screen


@needs_tmux
@needs_tui
def test_ticking_files_and_hunks_takes_back_only_what_is_ticked(project, tmux):
    """Issue 59: the screen lets the user tick the files and hunks going back takes, with the
    same preview; what is unticked stays on the undo stack."""
    _start(tmux, project)
    tmux.send("Down", "Right")   # "fix the lexer" and the turn after it
    screen = tmux.wait_for("Space tick")
    assert "> [x] test_lexer.py  (addition, turn 'write the tests')" in screen, screen
    assert "[x] lexer.py  (1 hunk, turn 'fix the lexer')" in screen
    assert "[x] tokens.py  (addition, turn 'fix the lexer')" in screen
    assert "--- /dev/null" not in screen and "new file mode 100644" in screen
    tmux.send("Down", "Down")      # lexer.py's hunk: its preview is the hunk
    screen = tmux.wait_for(">     [x] @@ -1,2 +1,2 @@")
    assert "+def lex(text):" in screen
    tmux.send("Space")
    screen = tmux.wait_for(">     [ ] @@ -1,2 +1,2 @@")
    assert "[ ] lexer.py" in screen and "not ticked: it stays" in screen
    tmux.send("Enter")
    screen = tmux.wait_for("[y/N]")
    assert 'Take back what is ticked, to before "fix the lexer"? (2 files change)' in screen
    assert "D  test_lexer.py" in screen and "D  tokens.py" in screen
    assert "M  lexer.py" not in screen
    tmux.send("y")
    tmux.wait_for("[exit 0]")
    files = _files(project)
    assert files["lexer.py"] == "def lex(text):\n    return text.split()\n"
    assert "tokens.py" not in files and "test_lexer.py" not in files
    log = subprocess.run([*UNDOSTORE, "log", "-s", "agent"], cwd=project, capture_output=True,
                         text=True, timeout=60).stdout
    assert "(part of the turn: without tokens.py)" in log, log
