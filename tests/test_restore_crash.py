"""A real restore process killed (SIGKILL on POSIX, TerminateProcess on Windows) at every step:
until recovery each file holds its old or its new content, and then the next command finishes the
restore to exactly the target, or `abort` rolls it back to exactly the safety snapshot, with no
temp file left.

The child stops at its k-th file operation through the checkpoint callable it hands the library
(`Worktree.checkpoint`), writes a marker and waits; the test kills it there. Every k is tried
until the restore runs to its end.
"""

from __future__ import annotations

import os
import random
import time

from undostore import Workspace
from undostore.restore.restorelog import journal_path

from .conftest import IS_WINDOWS, Exe, Link
from .crash_support import (
    ABORT,
    RECOVER,
    RESTORE,
    assert_each_file_old_or_new,
    run_until_stall,
    spawn,
)
from .restore_support import disk_state, temp_files


def _spec() -> tuple[dict, dict]:
    """(state A, state B): every kind of change a restore from B back to A makes."""
    a = {"keep": "unchanged", "edit1": "A1", "edit2": "A2\n" * 100, "edit3": "A3",
         "gone_in_b": "only in A", "sub": {"deep": {"new1": "n1", "new2": "n2"}},
         "f2d": "a file in A", "d2f": {"inner1": "i1", "inner2": "i2"}, "ro": "read-only A"}
    b = {"keep": "unchanged", "edit1": "B1", "edit2": "B2", "edit3": "B3",
         "f2d": {"inner": "a folder in B"}, "d2f": "a file in B", "ro": "read-only B",
         "only_b": {"x": "only in B", "y": {"z": "deep only in B"}}}
    if not IS_WINDOWS:
        a.update({"exec.sh": Exe("#!/bin/sh\n"), "link": Link("keep")})
        b.update({"exec.sh": "#!/bin/sh\n", "link": Link("edit1")})
    return a, b


def _write(root, spec) -> None:
    import shutil

    from .conftest import make_tree

    for name in os.listdir(root):
        if name != ".git":
            full = os.path.join(root, name)
            if os.path.isdir(full) and not os.path.islink(full):
                shutil.rmtree(full)
            else:
                os.chmod(full, 0o644) if not os.path.islink(full) else None
                os.unlink(full)
    make_tree(root, spec)
    os.chmod(os.path.join(root, "ro"), 0o444)


def _two_states(tree_factory):
    """A root holding state B, snapshotted after state A: (root, workspace, (id, files) of A,
    (id, files) of B)."""
    spec_a, spec_b = _spec()
    root = tree_factory({})
    _write(root, spec_a)
    ws = Workspace(root)
    snap_a = ws.snapshot().id
    state_a = disk_state(root)
    _write(root, spec_b)
    snap_b = ws.snapshot().id
    return root, ws, (snap_a, state_a), (snap_b, disk_state(root))


def test_kill_at_every_step_then_finish_or_abort(tree_factory, tmp_path):
    root, ws, (snap_a, state_a), (snap_b, state_b) = _two_states(tree_factory)
    marker = str(tmp_path / "stalled")
    k = 0
    while True:
        k += 1
        assert disk_state(root) == state_b
        proc = spawn(RESTORE, str(root), snap_a, stall_at=k, marker=marker)
        if not run_until_stall(proc, marker):
            break
        assert os.path.exists(journal_path(ws.store)), f"step {k}: no journal"
        assert_each_file_old_or_new(root, state_a, state_b)
        if k % 2:   # the next command finishes the restore
            assert Workspace(root).snapshot().id == snap_a, f"step {k}"
            assert disk_state(root) == state_a, f"step {k}"
            assert temp_files(root) == []
            Workspace(root).restore(snap_b)
        else:       # or it is rolled back
            result = Workspace(root).abort_restore()
            assert result is not None and result.target == snap_b, f"step {k}"
            assert disk_state(root) == state_b, f"step {k}"
            assert temp_files(root) == []
            assert Workspace(root).snapshot().id == snap_b
        assert not os.path.exists(journal_path(ws.store))
    assert disk_state(root) == state_a
    assert k > 15, f"only {k - 1} stall points: the hook did not cover the restore"


def test_kill_during_recovery_and_during_abort(tree_factory, tmp_path):
    root, ws, (snap_a, state_a), (snap_b, state_b) = _two_states(tree_factory)
    marker = str(tmp_path / "stalled")
    # Crash a restore half-way, then crash the recovery that finishes it.
    assert run_until_stall(spawn(RESTORE, str(root), snap_a, stall_at=6, marker=marker), marker)
    assert run_until_stall(spawn(RECOVER, str(root), stall_at=4, marker=marker), marker)
    assert_each_file_old_or_new(root, state_a, state_b)
    assert Workspace(root).snapshot().id == snap_a
    assert disk_state(root) == state_a
    # Crash a restore, then crash the abort; the next command finishes the abort.
    Workspace(root).restore(snap_b)
    assert run_until_stall(spawn(RESTORE, str(root), snap_a, stall_at=8, marker=marker), marker)
    assert run_until_stall(spawn(ABORT, str(root), stall_at=3, marker=marker), marker)
    assert_each_file_old_or_new(root, state_a, state_b)
    assert Workspace(root).snapshot().id == snap_b
    assert disk_state(root) == state_b
    assert temp_files(root) == []


def test_kill_after_random_delays_over_a_large_restore(tree_factory):
    files = {f"d{i % 40}/f{i}.txt": f"version A of {i}\n" * (1 + i % 7) for i in range(1200)}
    spec_a: dict = {}
    for path, text in files.items():
        folder, name = path.split("/")
        spec_a.setdefault(folder, {})[name] = text
    root = tree_factory(spec_a)
    ws = Workspace(root)
    snap_a = ws.snapshot().id
    state_a = disk_state(root)
    for i, path in enumerate(sorted(files)):
        full = os.path.join(root, *path.split("/"))
        if i % 3 == 0:
            os.unlink(full)
        elif i % 3 == 1:
            with open(full, "w") as f:
                f.write(f"version B of {i}\n")
    for i in range(300):
        os.makedirs(os.path.join(root, f"b{i % 10}"), exist_ok=True)
        with open(os.path.join(root, f"b{i % 10}", f"n{i}"), "w") as f:
            f.write("only in B\n")
    snap_b = ws.snapshot().id
    state_b = disk_state(root)
    rng = random.Random(20261129)
    low, high = 0.05, 5.0          # seconds after spawn: too early / too late, learnt as we go
    interrupted = 0
    for _ in range(20):
        proc = spawn(RESTORE, str(root), snap_a)
        delay = rng.uniform(low, min(high, low + 2.0))
        time.sleep(delay)
        proc.kill()
        proc.wait()
        assert_each_file_old_or_new(root, state_a, state_b)
        if not os.path.exists(journal_path(ws.store)):
            if disk_state(root) == state_a:     # it finished first: aim earlier
                high = delay
                Workspace(root).restore(snap_b)
            else:                               # killed before its first change: aim later
                assert disk_state(root) == state_b
                low = delay
            continue
        interrupted += 1
        if interrupted % 2:
            assert Workspace(root).snapshot().id == snap_a
            assert disk_state(root) == state_a
            Workspace(root).restore(snap_b)
        else:
            result = Workspace(root).abort_restore()
            assert result is not None
            assert disk_state(root) == state_b
        assert temp_files(root) == []
        assert not os.path.exists(journal_path(ws.store))
        if interrupted == 4:
            break
    assert interrupted >= 1, "no kill landed inside the restore"


UNDO = "undo"


def test_an_undo_killed_at_any_step_still_moves_its_point_to_redo(tree_factory, tmp_path):
    """Recovery finishes the files *and* the session step: the state before the undo stays
    reachable by redo, whichever step the undo was killed at (or it was rolled back whole)."""
    spec_a, spec_b = _spec()
    root = tree_factory({})
    _write(root, spec_a)
    marker = str(tmp_path / "stalled")
    k = 0
    while True:
        k += 1
        _write(root, spec_a)
        ws = Workspace(root)
        for name in ws.sessions():
            ws.drop(name.name)
        snap_a = ws.snapshot(session="s", label="before").id
        _write(root, spec_b)
        snap_b = ws.snapshot().id
        ws.close()
        proc = spawn(UNDO, str(root), stall_at=k, marker=marker)
        if not run_until_stall(proc, marker):
            log = Workspace(root).log("s")
            assert [(p.id, p.after) for p in log.redo] == [(snap_a, snap_b)] and not log.undo
            break
        if k % 2:   # the next command finishes the undo, files and history
            ws = Workspace(root)
            assert ws.snapshot().id == snap_a, f"step {k}"
            log = ws.log("s")
            assert [(p.id, p.after) for p in log.redo] == [(snap_a, snap_b)], \
                f"step {k}: redo lost the turn"
            assert not log.undo, f"step {k}"
            assert ws.redo("s").target == snap_b
            assert ws.snapshot().id == snap_b
        else:       # or it is rolled back, and the history with it stays as it was
            ws = Workspace(root)
            assert ws.abort_restore() is not None
            log = ws.log("s")
            assert [p.id for p in log.undo] == [snap_a] and not log.redo, f"step {k}"
            assert ws.snapshot().id == snap_b
        ws.close()
    assert k > 15
