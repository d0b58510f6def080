"""Several processes on one store: a dead holder never blocks the lock, a live one is named, and
two processes recording undo points (same or different sessions) lose nothing."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from undostore import Workspace
from undostore.errors import StoreError
from undostore.history.verify import verify
from undostore.store.lock import StoreLock

_HOLDER = textwrap.dedent("""
    import sys, time
    from undostore.store.lock import StoreLock
    lock = StoreLock(sys.argv[1], what="test holder")
    lock.acquire()
    print("locked", flush=True)
    time.sleep(120)
""")


def _start_holder(lock_path: str) -> subprocess.Popen:
    proc = subprocess.Popen([sys.executable, "-c", _HOLDER, lock_path],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout.readline().strip() == b"locked", proc.stderr.read().decode()
    return proc


def test_a_killed_process_holding_the_lock_does_not_block(tmp_path):
    root = tmp_path / "root"
    root.mkdir()
    (root / "a.txt").write_text("1")
    ws = Workspace(root, tmp_path / "store")
    holder = _start_holder(ws.store.lock.path)
    if sys.platform == "win32":
        holder.terminate()
    else:
        holder.send_signal(signal.SIGKILL)
    holder.wait(timeout=30)
    started = time.monotonic()
    ws.store.lock.timeout = 5
    result = ws.snapshot(session="s")
    assert time.monotonic() - started < 5
    assert ws.log("s").undo[0].id == result.id


def test_a_live_holder_makes_others_wait_then_fail_naming_it(tmp_path):
    lock_path = str(tmp_path / "lock")
    holder = _start_holder(lock_path)
    try:
        started = time.monotonic()
        with pytest.raises(StoreError, match=f"pid {holder.pid}"):
            StoreLock(lock_path, timeout=0.5).acquire()
        assert time.monotonic() - started >= 0.5
    finally:
        holder.kill()
        holder.wait(timeout=30)
    with StoreLock(lock_path, timeout=5):
        pass


_RECORDER = textwrap.dedent("""
    import os, sys, time
    from undostore import Workspace
    root, store, session, rounds, name = sys.argv[1:6]
    ws = Workspace(root, store)
    print("ready", flush=True)
    go = os.path.join(os.path.dirname(store), "go")
    while not os.path.exists(go):
        time.sleep(0.001)
    skipped = []
    for i in range(int(rounds)):
        with open(os.path.join(root, name), "w") as f:
            f.write("%s %d\\n" % (name, i))
        result = ws.snapshot(session=session, label="%s %d" % (name, i), meta={"i": i})
        if not result.recorded:  # the other writer recorded these same files just before
            skipped.append(i)
    print("done", *skipped, flush=True)
""")


def _race(tmp_path, sessions: tuple[str, str], rounds: int) -> Workspace:
    root = tmp_path / "root"
    root.mkdir()
    store = tmp_path / "store"
    Workspace(root, store).close()   # the store exists before the race (creation is not its
    env = dict(os.environ, UNDOSTORE_GC_EVERY="7")   # subject)
    procs = [subprocess.Popen([sys.executable, "-c", _RECORDER, str(root), str(store), session,
                               str(rounds), f"writer{i}.txt"],
                              env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
             for i, session in enumerate(sessions)]
    for proc in procs:
        assert proc.stdout.readline().strip() == b"ready", proc.stderr.read().decode()
    (tmp_path / "go").touch()
    skipped = []
    for proc in procs:
        out, err = proc.communicate(timeout=180)
        assert proc.returncode == 0, err.decode()
        skipped.append([int(i) for i in out.split()[1:]])
    ws = Workspace(root, store)
    ws.skipped = skipped  # per writer: rounds whose point equalled the newest one (not recorded)
    return ws


def test_two_processes_recording_in_two_sessions_lose_nothing(tmp_path):
    ws = _race(tmp_path, ("one", "two"), rounds=20)
    assert {(s.name, s.undo) for s in ws.sessions()} == {("one", 20), ("two", 20)}
    for i, session in enumerate(("one", "two")):
        labels = [p.label for p in ws.log(session).undo]
        assert labels == [f"writer{i}.txt {n}" for n in range(19, -1, -1)]
    assert verify(ws.store).ok


def test_two_processes_recording_in_one_session_lose_nothing(tmp_path):
    ws = _race(tmp_path, ("shared", "shared"), rounds=15)
    points = ws.log("shared").undo
    assert len(points) == 30 - sum(len(s) for s in ws.skipped)
    seen = []
    for name in ("writer0.txt", "writer1.txt"):
        mine = [p.meta["i"] for p in points if p.label.startswith(name)]
        # Each writer's points in its own order. A round whose files equal the newest point's
        # records none: it takes over that point (whose turn changed nothing), label and all.
        assert mine == sorted(set(mine), reverse=True)
        seen += mine
    assert len(seen) == len(points)
    # No two neighbours are equal: a point equal to the newest one is not recorded.
    assert all(a.id != b.id for a, b in zip(points[:-1], points[1:], strict=True))
    assert verify(ws.store).ok
