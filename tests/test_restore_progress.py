"""Restore progress: the library reports steps and counts through `on_progress` and never
prints; the CLI draws one line on stderr only when stderr is a terminal and the restore has run
past a second, and nothing at all when piped."""

from __future__ import annotations

import io
import os
import subprocess
import sys
import time

import pytest
from undostore_cli.progress import TerminalProgress, describe

from undostore import Workspace
from undostore.progress import Progress

from .conftest import IS_WINDOWS


def _two_states(root) -> tuple[Workspace, str, str, dict[str, bytes]]:
    """A workspace at state B, with A (snapshot) holding 40 files B changes or lacks."""
    files = {f"d{i % 4}/f{i}.txt": (f"file {i}\n" * (i + 1)).encode() for i in range(40)}
    for rel, data in files.items():
        os.makedirs(root / os.path.dirname(rel), exist_ok=True)
        (root / rel).write_bytes(data)
    ws = Workspace(root)
    a = ws.snapshot().id
    for i, rel in enumerate(sorted(files)):
        if i % 2:
            (root / rel).write_bytes(b"changed\n")
        else:
            os.unlink(root / rel)
    (root / "new_in_b.txt").write_text("only in B\n")
    b = ws.snapshot().id
    return ws, a, b, files


def test_restore_reports_each_step_then_every_file_and_byte(tmp_path):
    root = tmp_path / "root"
    root.mkdir()
    ws, a, _, files = _two_states(root)
    events: list[Progress] = []
    result = ws.restore(a, on_progress=events.append)
    steps = [e.step for e in events]
    assert steps[:2] == ["safety", "plan"] and steps[-1] == "sync"
    writes = [e for e in events if e.step == "write"]
    assert writes, steps
    assert writes[-1].files_done == writes[-1].files_total == \
        len(result.created) + len(result.modified) + len(result.deleted) == len(files) + 1
    assert writes[-1].bytes_done == writes[-1].bytes_total == sum(map(len, files.values()))
    done = [(e.files_done, e.bytes_done) for e in writes]
    assert done == sorted(done), "progress went backwards"
    ws.close()


def test_a_restore_with_nothing_to_write_reports_no_write_step(tmp_path):
    root = tmp_path / "root"
    root.mkdir()
    ws, _, b, _ = _two_states(root)
    events: list[Progress] = []
    assert not ws.restore(b, on_progress=events.append).changed
    assert [e.step for e in events] == ["safety", "plan"]
    ws.close()


def test_undo_and_redo_report_progress_too(tmp_path):
    root = tmp_path / "root"
    root.mkdir()
    (root / "a.txt").write_text("one\n")
    ws = Workspace(root)
    ws.snapshot(session="s")
    (root / "a.txt").write_text("two\n")
    for step in (ws.undo, ws.redo):
        events: list[Progress] = []
        step("s", on_progress=events.append)
        assert [e.step for e in events if e.step == "write"][-1:] == ["write"]
        assert [e for e in events if e.step == "write"][-1].files_done == 1
    ws.close()


def test_revert_reports_progress_too(tmp_path):
    root = tmp_path / "root"
    root.mkdir()
    (root / "a.txt").write_text("one\n")
    ws = Workspace(root)
    before = ws.snapshot().id
    (root / "a.txt").write_text("two\n")
    after = ws.snapshot().id
    events: list[Progress] = []
    ws.revert(before, after, on_progress=events.append)
    assert (root / "a.txt").read_text() == "one\n"
    assert [e for e in events if e.step == "write"][-1].files_done == 1
    ws.close()


def test_the_terminal_line_waits_for_the_delay_and_is_cleared_at_the_end():
    now = [0.0]
    stream = io.StringIO()
    shown = TerminalProgress(stream, delay=1.0, clock=lambda: now[0])
    with shown:
        shown(Progress("write", 5, 20, 1_500_000, 6_000_000))
        now[0] = 0.9
        shown.draw()
        assert stream.getvalue() == ""
        now[0] = 1.1
        shown.draw()
        assert stream.getvalue() == "\rundostore: writing files: 5/20 files, 1.5/6.0 MB"
    assert stream.getvalue().endswith("\r" + " " * len(describe(shown.latest)) + "\r")


def test_a_question_clears_the_line_and_holds_it_back_while_it_is_asked():
    now = [5.0]
    stream = io.StringIO()
    shown = TerminalProgress(stream, delay=1.0, clock=lambda: now[0])
    seen_while_asking = []

    def confirm(plan: object) -> bool:
        seen_while_asking.append(stream.getvalue())
        shown.draw()                      # the thread's tick, while the question is up
        seen_while_asking.append(stream.getvalue())
        return True

    with shown:
        now[0] = 7.0
        shown(Progress("plan"))
        shown.draw()
        assert stream.getvalue().startswith("\rundostore: checking the snapshot")
        answer = shown.pausing(lambda plan: now.__setitem__(0, now[0] + 30) or confirm(plan))
        assert answer("plan") is True
        assert seen_while_asking[0] == seen_while_asking[1]
        assert seen_while_asking[0].endswith("\r")   # cleared before asking
        drawn = stream.getvalue()
        now[0] += 0.1
        shown.draw()   # the 30 s spent answering do not count: still past the delay, drawn
        assert stream.getvalue() != drawn
    assert TerminalProgress(None).pausing(None) is None


def test_piped_cli_restore_writes_no_progress_to_stderr(tmp_path, cli):
    root = tmp_path / "root"
    root.mkdir()
    ws, a, _, _ = _two_states(root)
    ws.close()
    done = cli.run("restore", a, "--yes", "--json", root=root)
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""


@pytest.mark.skipif(IS_WINDOWS, reason="needs a POSIX pseudo-terminal")
def test_cli_restore_on_a_terminal_shows_files_and_bytes_once_past_a_second(tmp_path):
    """A real restore process with stderr on a pseudo-terminal, held at its third file
    operation (tests/stall.py, as the crash tests) for longer than the delay: the line is
    there."""
    import pty

    root = tmp_path / "root"
    root.mkdir()
    ws, a, _, files = _two_states(root)
    ws.close()
    marker = tmp_path / "stalled"
    leader, follower = pty.openpty()
    stall = os.path.join(os.path.dirname(__file__), "stall.py")
    proc = subprocess.Popen([sys.executable, stall, "3", str(marker), "--root", str(root),
                             "restore", a, "--yes"], stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=follower)
    os.close(follower)
    try:
        deadline = time.monotonic() + 60
        while not marker.exists():
            assert proc.poll() is None and time.monotonic() < deadline, "never stalled"
            time.sleep(0.05)
        time.sleep(1.6)  # past the delay, and a few ticks of the drawing thread
        os.set_blocking(leader, False)
        shown = os.read(leader, 65536).decode()
    finally:
        proc.kill()
        proc.wait()
        os.close(leader)
    assert "undostore: writing files: " in shown and f"/{len(files) + 1} files" in shown, shown
    assert " MB" in shown
    # The restore was killed half-way; the next command finishes it (crash rules unchanged).
    with Workspace(root) as again:
        assert again.snapshot().id == a
