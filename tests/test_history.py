"""Nothing handed out is lost (issue 22), through real CLI processes: a safety id outlives its
journal entry and gc, redo survives points that change nothing, restore and revert are undone
alone, status names the asking conversation and tells a live restore from a dead one's, and a
moved project takes its history along."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from .conftest import IS_WINDOWS, Cli

STALL = str(Path(__file__).with_name("stall.py"))


def run(*args: str, cwd: Path, stdin: str | None = None,
        env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """conftest's runner, with `env` added to this process's environment."""
    return Cli().run(*args, cwd=cwd, input=stdin, env={**os.environ, **(env or {})})


def ok(*args: str, cwd: Path, **kw: object) -> subprocess.CompletedProcess[str]:
    done = run(*args, cwd=cwd, **kw)  # type: ignore[arg-type]
    assert done.returncode == 0, (args, done.stdout, done.stderr)
    return done


def js(*args: str, cwd: Path, **kw: object) -> dict:
    return json.loads(ok(*args, "--json", cwd=cwd, **kw).stdout)


def files(root: Path) -> dict[str, str]:
    return {p.relative_to(root).as_posix(): p.read_text() for p in sorted(root.rglob("*"))
            if p.is_file()}


def test_a_safety_id_outlives_its_redo_entry_a_new_point_and_gc(tree_factory):
    root = tree_factory({"a.txt": "1"})
    ok("snapshot", "-s", "a", cwd=root)
    (root / "a.txt").write_text("2")
    safety = js("undo", "-s", "a", "--yes", cwd=root)["safety"]
    assert files(root) == {"a.txt": "1"}
    ok("snapshot", "-s", "a", cwd=root)            # a prompt: the redo chain stays
    assert js("log", "-s", "a", cwd=root)["redo"]
    (root / "a.txt").write_text("3")
    ok("snapshot", "-s", "a", cwd=root)            # that turn changed a file: redo cleared
    cleared = [o for o in js("ops", cwd=root)["ops"] if o["op"] == "clear-redo"]
    assert [o.get("ids") for o in cleared] == [[safety]]   # the turn's after: the safety id
    ok("gc", cwd=root)
    ok("gc", "--grace", "3600", cwd=root)          # an hour's grace is no day: it still stays
    ok("restore", safety[:12], "--yes", cwd=root)  # the 12-hex form ops and log show
    assert files(root) == {"a.txt": "2"}
    (root / "a.txt").write_text("4")
    ok("restore", safety, "--yes", cwd=root)
    assert files(root) == {"a.txt": "2"}


def test_points_recorded_on_every_prompt_keep_the_redo_they_are_about_to_use(tree_factory):
    """A host that records a point for every prompt, `/undo` and `/redo` included: undo, undo,
    redo, redo lands back on the newest files."""
    root = tree_factory({"a.txt": "turn 0"})
    for turn in (1, 2):
        ok("snapshot", "-s", "c", "--label", f"turn {turn}", cwd=root)
        (root / "a.txt").write_text(f"turn {turn}")
    newest = files(root)
    for command in ("undo", "undo", "redo", "redo"):
        ok("snapshot", "-s", "c", "--label", f"/{command}", cwd=root)   # the host's point
        ok(command, "-s", "c", "--yes", cwd=root)
    assert files(root) == newest
    log = js("log", "-s", "c", cwd=root)
    assert [p["label"] for p in log["undo"]] == ["turn 2", "turn 1"] and log["redo"] == []
    ok("undo", "-s", "c", "--yes", cwd=root)
    assert files(root) == {"a.txt": "turn 1"}


def test_undo_after_a_restore_or_a_revert_takes_back_only_that(tree_factory):
    root = tree_factory({"a.txt": "1", "b.txt": "x"})
    first = ok("snapshot", "-s", "s", "--label", "one", cwd=root).stdout.strip()
    (root / "a.txt").write_text("2")
    ok("snapshot", "-s", "s", "--label", "two", cwd=root)
    (root / "b.txt").write_text("y")
    before = files(root)
    ok("restore", first, "--yes", cwd=root)
    assert files(root) == {"a.txt": "1", "b.txt": "x"}
    log = js("log", "-s", "s", cwd=root)
    assert log["undo"][0]["label"] == f"before restore {first[:12]}"
    ok("undo", "-s", "s", "--yes", cwd=root)
    assert files(root) == before                    # the restore alone was taken back
    (second,) = [p["id"] for p in js("log", "-s", "s", cwd=root)["undo"] if p["label"] == "two"]
    ok("revert", second, "--yes", "-s", "s", cwd=root)          # takes back b.txt's edit
    assert files(root) == {"a.txt": "2", "b.txt": "x"}
    ok("undo", "-s", "s", "--yes", cwd=root)
    assert files(root) == before                    # the revert alone was taken back


def test_status_names_the_conversation_that_asks(tree_factory):
    root = tree_factory({"a.txt": "0"})
    for text, session in (("1", "conv-one"), ("2", "conv-two"), ("3", "conv-two")):
        (root / "a.txt").write_text(text)
        ok("snapshot", "-s", session, cwd=root)
    elsewhere = root.parent
    line = {"session_id": "conv-one", "cwd": str(root), "workspace": {"current_dir": str(root)}}
    assert ok("status", cwd=elsewhere, stdin=json.dumps(line)).stdout == "undo:1 redo:0\n"
    line["session_id"] = "conv-two"
    assert ok("status", cwd=elsewhere, stdin=json.dumps(line)).stdout == "undo:2 redo:0\n"
    # An empty stdin, or none that is JSON, means no host: the newest session, from the folder.
    assert ok("status", cwd=root, stdin="").stdout == "undo:2 redo:0\n"
    assert ok("status", cwd=root, stdin="not json").stdout == "undo:2 redo:0\n"


@pytest.mark.skipif(IS_WINDOWS, reason="an open pipe nobody writes, without select (POSIX)")
def test_status_does_not_wait_for_a_pipe_that_stays_silent(tree_factory):
    root = tree_factory({"a.txt": "0"})
    ok("snapshot", "-s", "s", cwd=root)
    reader, writer = os.pipe()
    try:
        started = time.monotonic()
        done = subprocess.run([sys.executable, "-m", "undostore", "status"], stdin=reader,
                              capture_output=True, text=True, cwd=root, timeout=60)
        assert time.monotonic() - started < 30
    finally:
        os.close(reader)
        os.close(writer)
    assert (done.returncode, done.stdout) == (0, "undo:1 redo:0\n")


def _stalled_undo(root: Path, marker: Path) -> subprocess.Popen:
    proc = subprocess.Popen([sys.executable, STALL, "2", str(marker), "undo", "-s", "s",
                             "--yes"], cwd=root, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 120
    while not marker.exists():
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline
        time.sleep(0.05)
    return proc


@pytest.mark.skipif(IS_WINDOWS, reason="SIGKILL of a paused child (POSIX signals)")
def test_status_tells_a_live_restore_from_one_a_dead_process_left(tree_factory):
    root = tree_factory({f"f{i}.txt": "old" for i in range(5)})
    ok("snapshot", "-s", "s", cwd=root)
    for i in range(5):
        (root / f"f{i}.txt").write_text("new")
    proc = _stalled_undo(root, root.parent / "marker")
    try:
        live = js("status", cwd=root, stdin="")
        assert live["restoring"] is True and live["pending"] is None
        assert ok("status", cwd=root, stdin="").stdout == "undo:1 redo:0 restoring\n"
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.communicate()
    dead = js("status", cwd=root, stdin="")
    assert dead["restoring"] is False and dead["pending"]["operation"] == "restore"
    assert ok("status", cwd=root, stdin="").stdout == "undo:1 redo:0 recovery_required\n"
    ok("snapshot", cwd=root)                          # the next command finishes it
    assert ok("status", cwd=root, stdin="").stdout == "undo:0 redo:1\n"


def test_a_moved_project_takes_its_history_along(tmp_path):
    """No command needed: the first command in the new place (here the hook, as a host runs it
    on the first prompt there) takes along the one store whose root is gone and whose files are
    here, says so once, and every later command, the hook and the status line find it."""
    project = tmp_path / "project"
    project.mkdir()
    (project / "a.txt").write_text("1")
    (project / "src").mkdir()
    (project / "src" / "m.py").write_text("m")
    ok("snapshot", "-s", "s", "--label", "first", cwd=project)
    (project / "a.txt").write_text("2")
    moved = tmp_path / "moved"
    shutil.move(str(project), str(moved))
    event = {"session_id": "s", "cwd": str(moved), "hook_event_name": "UserPromptSubmit",
             "prompt": "second"}
    first_look = run("hook", cwd=tmp_path, stdin=json.dumps(event))
    assert first_look.returncode == 0, first_look.stderr
    assert "this project moved here: took its store along" in first_look.stderr
    again = run("log", "-s", "s", cwd=moved)
    assert "moved here" not in again.stderr            # said once
    log = js("log", "-s", "s", cwd=moved)
    assert [p["label"] for p in log["undo"]] == ["second", "first"]
    ok("undo", "-s", "s", "--yes", cwd=moved)   # "first" changed a.txt; "second" nothing
    assert files(moved) == {"a.txt": "1", "src/m.py": "m"}
    line = json.dumps({"session_id": "s", "cwd": str(moved)})
    assert ok("status", cwd=tmp_path, stdin=line).stdout == "undo:0 redo:1\n"
    stores = js("stores", cwd=moved)["stores"]
    assert [(Path(s["root"]).name, s["root_exists"]) for s in stores] == [("moved", True)]


def test_two_moved_projects_that_both_match_are_named_not_guessed(tmp_path):
    """Two copies of one project, both gone: the files here match both, so neither is taken;
    a project of the same names but other contents matches neither."""
    for name in ("one", "two"):
        project = tmp_path / name
        (project / "src").mkdir(parents=True)
        (project / "a.txt").write_text("the same project\n")
        (project / "src" / "m.py").write_text("print()\n")
        ok("snapshot", cwd=project)
    for name in ("one", "two"):
        shutil.rmtree(tmp_path / name)
    other = tmp_path / "other"
    (other / "src").mkdir(parents=True)
    (other / "a.txt").write_text("another project\n")
    (other / "src" / "m.py").write_text("pass\n")
    alone = run("snapshot", cwd=other)
    assert alone.returncode == 0 and "took its store along" not in alone.stderr
    assert "several stores" not in alone.stderr
    here = tmp_path / "here"
    (here / "src").mkdir(parents=True)
    (here / "a.txt").write_text("the same project\n")
    (here / "src" / "m.py").write_text("print()\n")
    first = run("snapshot", cwd=here)
    assert first.returncode == 0
    assert "several stores of moved projects match" in first.stderr
    assert "`undostore --store PATH rebind`" in first.stderr
    stores = js("stores", cwd=here)["stores"]
    assert sorted((Path(s["root"]).name, s["root_exists"]) for s in stores) == [
        ("here", True), ("one", False), ("other", True), ("two", False)]
