"""Ctrl-C during restore, undo and snapshot, and a restore killed outright: real processes, real
signals. A restore stops at its k-th file operation (a checkpoint callback set by
tests/stall.py) and gets SIGINT (or SIGKILL) there.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from undostore import Workspace
from undostore.restore.restorelog import journal_path

from .conftest import CLI, IS_WINDOWS
from .restore_support import disk_state, temp_files

pytestmark = pytest.mark.skipif(IS_WINDOWS, reason="POSIX signals to a child process; the "
                                "Windows lane runs the in-process guard tests below")

STALL = os.path.join(os.path.dirname(os.path.abspath(__file__)), "stall.py")


def _states(tree_factory, files: int = 60):
    """A root at state B, snapshotted at A before: (root, id A, files A, id B, files B)."""
    root = tree_factory({})
    for i in range(files):
        folder = root / f"d{i % 7}"
        folder.mkdir(exist_ok=True)
        (folder / f"f{i}").write_text(f"A {i}\n")
    (root / "gone_in_b").write_text("only in A")
    ws = Workspace(root)
    snap_a, state_a = ws.snapshot().id, disk_state(root)
    for i in range(0, files, 2):
        (root / f"d{i % 7}" / f"f{i}").write_text(f"B {i}\n" * 3)
    (root / "gone_in_b").unlink()
    (root / "new_in_b").mkdir()
    (root / "new_in_b" / "x").write_text("only in B")
    snap_b = ws.snapshot().id
    ws.close()
    return root, snap_a, state_a, snap_b, disk_state(root)


def _spawn(args: list[str], stall_at: int = 0, marker: str = "") -> subprocess.Popen:
    """Start a child; with `stall_at`, its restore waits at that file operation (tests/stall.py):
    a CLI child runs through the stall script, a `-c` script gets (k, marker, stall script)."""
    if stall_at and args[:3] == CLI:
        args = [sys.executable, STALL, str(stall_at), marker, *args[3:]]
    elif stall_at:
        args = [*args, str(stall_at), marker, STALL]
    # A full walk: what is tested is the interrupt, not a watchman daemon another test left.
    env = {**os.environ, "UNDOSTORE_FSMONITOR": "off"}
    return subprocess.Popen(args, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def _wait_for(proc: subprocess.Popen, marker: str, timeout: float = 60) -> bool:
    """True once the child waits at its stall point; False if it ended first."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if os.path.exists(marker):
            os.unlink(marker)
            return True
        if proc.poll() is not None:
            return False
        time.sleep(0.01)
    proc.kill()
    raise AssertionError("the child neither stalled nor finished")


def _ctrl_c_at(args: list[str], stall_at: int, marker: str) -> tuple[bytes, bytes]:
    """Run `args` until its restore waits at file operation `stall_at`, press Ctrl-C there:
    its (stdout, stderr), once it has exited 130."""
    proc = _spawn(args, stall_at, marker)
    assert _wait_for(proc, marker)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, (out, err)
    return out, err


def _kill_restore_at(root, target: str, stall_at: int, marker: str) -> None:
    """A CLI restore of `target` killed outright (SIGKILL) at its file operation `stall_at`."""
    proc = _spawn([*CLI, "--root", str(root), "restore", target, "--yes"], stall_at, marker)
    assert _wait_for(proc, marker)
    proc.kill()
    proc.wait()


def _nothing_pending(root) -> None:
    with Workspace(root) as ws:
        assert not os.path.exists(journal_path(ws.store))
        assert ws.pending_restore() is None
    assert temp_files(root) == []


def test_ctrl_c_at_any_step_of_a_restore_rolls_it_back_and_exits_130(tree_factory, tmp_path):
    root, snap_a, _, _, state_b = _states(tree_factory)
    marker = str(tmp_path / "stalled")
    interrupted = 0
    for k in range(1, 200, 7):
        proc = _spawn([*CLI, "--root", str(root), "restore", snap_a, "--yes"], k, marker)
        if not _wait_for(proc, marker):
            assert proc.wait() == 0
            break
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 130, (k, err)
        lines = err.decode().strip().splitlines()
        assert len(lines) == 1 and "rolled back" in lines[0] and "nothing is pending" in lines[0]
        assert disk_state(root) == state_b, f"step {k}"
        _nothing_pending(root)
        interrupted += 1
    assert interrupted >= 5


def test_ctrl_c_with_json_gives_one_json_object_and_exit_130(tree_factory, tmp_path):
    root, snap_a, _, _, state_b = _states(tree_factory)
    marker = str(tmp_path / "stalled")
    out, _ = _ctrl_c_at([*CLI, "--root", str(root), "restore", snap_a, "--yes", "--json"], 9,
                        marker)
    body = json.loads(out)
    assert body["exit_code"] == 130 and body["error"]["type"] == "Interrupted"
    assert disk_state(root) == state_b


def test_sigterm_during_a_restore_is_a_cancel_request_too(tree_factory, tmp_path):
    """A host closing undostore sends SIGTERM: the restore rolls back as on Ctrl-C."""
    root, snap_a, _, _, state_b = _states(tree_factory)
    marker = str(tmp_path / "stalled")
    proc = _spawn([*CLI, "--root", str(root), "restore", snap_a, "--yes"], 20, marker)
    assert _wait_for(proc, marker)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130 and b"rolled back" in err, err
    assert disk_state(root) == state_b
    _nothing_pending(root)


def test_ctrl_c_during_undo_leaves_the_session_and_the_files_as_they_were(tree_factory,
                                                                           tmp_path):
    root, snap_a, _, snap_b, state_b = _states(tree_factory)
    with Workspace(root) as ws:   # the session's undo point is A; the files are at B
        ws.restore(snap_a)
        ws.snapshot(session="s")
        ws.restore(snap_b)
    before = disk_state(root)
    marker = str(tmp_path / "stalled")
    _ctrl_c_at([*CLI, "--root", str(root), "undo", "--session", "s", "--yes"], 6, marker)
    assert disk_state(root) == before == state_b
    with Workspace(root) as ws:
        log = ws.log("s")
        assert [p.id for p in log.undo] == [snap_a] and log.redo == []
    _nothing_pending(root)


SECOND_CTRL_C = """
import os, runpy, signal, sys
from undostore import Workspace
from undostore.errors import Interrupted
ws = Workspace(sys.argv[1])
signal.signal(signal.SIGINT, lambda *_: ws.cancel.set())   # the host's handler, not the library's
ws.checkpoint = runpy.run_path(sys.argv[5])["stall_at"](int(sys.argv[3]), sys.argv[4],
                                                        ws.cancel.is_set)
take = ws._snapshot_locked
calls = []
def snapshot(*args):
    calls.append(1)
    if len(calls) == 2:   # the roll-back's snapshot: a second Ctrl-C arrives now
        os.kill(os.getpid(), signal.SIGINT)
    return take(*args)
ws._snapshot_locked = snapshot
try:
    ws.restore(sys.argv[2])
except Interrupted as err:
    print("interrupted:", err.message, "calls", len(calls))
    sys.exit(130)
print("not interrupted")
"""


def test_a_second_ctrl_c_during_the_roll_back_waits_until_it_is_done(tree_factory, tmp_path):
    root, snap_a, _, _, state_b = _states(tree_factory)
    marker = str(tmp_path / "stalled")
    out, _ = _ctrl_c_at([sys.executable, "-c", SECOND_CTRL_C, str(root), snap_a], 12, marker)
    assert b"rolled back" in out and b"calls 2" in out
    assert disk_state(root) == state_b
    _nothing_pending(root)


def test_ctrl_c_during_a_snapshot_leaves_no_pack_and_no_temp_file(tree_factory):
    root = tree_factory({})
    # 72 MB of incompressible bytes: the snapshot outlasts the first delay even when a loaded
    # machine wakes this test late from its sleep (36 MB once finished first there).
    for i in range(12):
        (root / f"big{i}").write_bytes(os.urandom(6 << 20))
    ws = Workspace(root)
    packs = sorted(os.listdir(ws.store.pack_dir))
    ws.close()
    outcomes = set()
    ready = tree_factory({}) / "ready"
    # The CLI's main once its imports are done (a Ctrl-C during Python's own start-up is
    # Python's to report), so that the signal lands in the snapshot.
    started = ("import sys; from undostore_cli.main import main; "
               f"open({str(ready)!r}, 'w').close(); main(sys.argv[1:])")
    # From 0.1 s on: a signal in the instant between the marker and main() is Python's own.
    for delay in (0.1, 0.2, 0.35, 0.5, 0.8, 1.2):
        proc = _spawn([sys.executable, "-c", started, "--root", str(root), "snapshot"])
        while not ready.exists() and proc.poll() is None:
            time.sleep(0.002)
        ready.unlink()
        time.sleep(delay)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=120)
        outcomes.add(proc.returncode)
        if proc.returncode == 0:
            break
        assert proc.returncode == 130, err
        assert sorted(os.listdir(ws.store.pack_dir)) == packs
        leftovers = [os.path.join(d, n) for d, _, names in os.walk(ws.store.path)
                     for n in names if ".undostore-tmp-" in n]
        assert leftovers == []
    assert 130 in outcomes


def test_a_killed_restore_is_finished_by_the_next_command_which_says_so(tree_factory,
                                                                         tmp_path):
    root, snap_a, state_a, snap_b, _ = _states(tree_factory)
    marker = str(tmp_path / "stalled")
    _kill_restore_at(root, snap_a, 15, marker)
    for command in ("log", "sessions", "verify"):
        done = subprocess.run([*CLI, "--root", str(root), command], capture_output=True)
        assert b"pending" in done.stderr and b"restore --abort" in done.stderr, command
        as_json = subprocess.run([*CLI, "--root", str(root), command, "--json"],
                                 capture_output=True)
        pending = json.loads(as_json.stdout)["pending"]
        assert pending["target"] == snap_a and pending["rollback"] == snap_b
    done = subprocess.run([*CLI, "--root", str(root), "snapshot"], capture_output=True)
    assert done.returncode == 0, done.stderr
    notice = done.stderr.decode()
    assert "finishing" in notice and snap_a[:12] in notice and "restore --abort" in notice
    assert snap_b[:12] in notice        # the way back once it is finished
    assert done.stdout.decode().strip() == snap_a
    assert disk_state(root) == state_a
    _nothing_pending(root)


def test_ctrl_c_while_finishing_a_killed_restore_rolls_it_back(tree_factory, tmp_path):
    root, snap_a, _, _, state_b = _states(tree_factory)
    marker = str(tmp_path / "stalled")
    _kill_restore_at(root, snap_a, 20, marker)
    _, err = _ctrl_c_at([*CLI, "--root", str(root), "snapshot"], 4, marker)
    assert b"finishing" in err and b"rolled back" in err
    assert disk_state(root) == state_b
    _nothing_pending(root)


def test_ctrl_c_during_a_revert_rolls_it_back_and_exits_130(tree_factory, tmp_path):
    from .crash_support import revert_history

    root, ws, from_id, to_id = revert_history(tree_factory)
    ws.close()
    before = disk_state(root)
    marker = str(tmp_path / "stalled")
    _, err = _ctrl_c_at([*CLI, "--root", str(root), "revert", from_id, to_id, "--merge", "--yes"],
                        7, marker)
    assert b"rolled back" in err
    assert disk_state(root) == before
    _nothing_pending(root)


ABORT_WITH_CTRL_C = """
import os, signal, sys
from undostore import Workspace
from undostore.errors import Interrupted
ws = Workspace(sys.argv[1])
signal.signal(signal.SIGINT, lambda *_: ws.cancel.set())   # the host's handler, not the library's
take = ws._snapshot_locked
def snapshot(*args):
    os.kill(os.getpid(), signal.SIGINT)   # Ctrl-C while `restore --abort` rolls back
    return take(*args)
ws._snapshot_locked = snapshot
try:
    ws.abort_restore()
except Interrupted as err:
    print(err.message)
    sys.exit(130)
print("not interrupted")
"""


def test_ctrl_c_during_restore_abort_waits_until_the_roll_back_is_done(tree_factory, tmp_path):
    root, snap_a, _, _, state_b = _states(tree_factory)
    marker = str(tmp_path / "stalled")
    _kill_restore_at(root, snap_a, 15, marker)
    done = subprocess.run([sys.executable, "-c", ABORT_WITH_CTRL_C, str(root)],
                          capture_output=True, timeout=60)
    assert done.returncode == 130, done.stderr
    assert b"roll-back" in done.stdout and b"was done" in done.stdout
    assert disk_state(root) == state_b
    _nothing_pending(root)


def test_sigterm_during_an_undo_typed_in_a_host_rolls_it_back(tree_factory, tmp_path):
    """A host that gives up on its hook (a timeout, the user closing it) sends SIGTERM: an
    `/undo` the hook is doing rolls back as the CLI's does, the turn stays to undo, nothing is
    left pending, and the hook ends with exit 1 and one line (never 2)."""
    root, snap_a, _, snap_b, state_b = _states(tree_factory)
    with Workspace(root) as ws:   # the session's turn took the files from A to B
        ws.restore(snap_a)
        ws.snapshot(session="s", label="the turn")
        ws.restore(snap_b)
        ws.end_turn("s")
        history = ws.log("s")
    before = disk_state(root)
    marker = str(tmp_path / "stalled")
    event = json.dumps({"session_id": "s", "cwd": str(root), "hook_event_name":
                        "UserPromptSubmit", "prompt": "/undo"})
    (tmp_path / "event.json").write_text(event)
    with open(tmp_path / "event.json", "rb") as stdin:
        proc = subprocess.Popen([sys.executable, STALL, "20", marker, "hook", "--host",
                                 "claude-code"], env={**os.environ, "UNDOSTORE_FSMONITOR": "off"},
                                cwd=root, stdin=stdin, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE)
    assert _wait_for(proc, marker)
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 1 and out == b"", (proc.returncode, out, err)
    assert err.count(b"\n") == 1 and b"undostore: error: hook:" in err, err
    assert b"rolled back" in err, err
    assert disk_state(root) == before == state_b
    with Workspace(root) as ws:
        assert ws.log("s") == history   # the turn still to undo, no redo
    _nothing_pending(root)
