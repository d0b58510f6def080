"""A real revert process killed at every step of its restore: until recovery each file holds its
old content (the files before the revert) or its new one (the merged result); the next command
finishes the revert to exactly the merged tree, or `abort_restore` rolls it back to exactly the
files before. Uses the stall hook and helpers of test_restore_crash."""

from __future__ import annotations

import os

from undostore import Workspace
from undostore.restore.restorelog import journal_path

from .conftest import IS_WINDOWS, Exe, Link
from .restore_support import disk_state, temp_files
from .test_restore_crash import _assert_each_file_old_or_new, _run_until_stall, _spawn

REVERT = "revert"   # the crash child of test_restore_crash reverts FROM TO with merge
LINES = "".join(f"line {i}\n" for i in range(1, 41))


def _edit(text: str, *changes: tuple[int, str]) -> str:
    lines = text.splitlines(keepends=True)
    for number, new in changes:
        lines[number - 1] = new + "\n"
    return "".join(lines)


def _history(tree_factory):
    """(root, workspace, FROM id, TO id): a turn FROM -> TO touching many files, then later
    edits on top (the files now), some of them overlapping the turn."""
    before = {f"t{i}.txt": LINES for i in range(8)}
    before.update({"gone.txt": "deleted by the turn\n", "sub": {"deep.txt": LINES}})
    if not IS_WINDOWS:
        before.update({"run.sh": Exe("#!/bin/sh\n"), "link": Link("t0.txt")})
    root = tree_factory(before)
    ws = Workspace(root)
    from_id = ws.snapshot().id
    for i in range(8):
        (root / f"t{i}.txt").write_text(_edit(LINES, (5, f"turn {i}")), newline="")
    (root / "gone.txt").unlink()
    (root / "added.txt").write_text("added by the turn\n", newline="")
    (root / "sub" / "deep.txt").write_text(_edit(LINES, (2, "turn")), newline="")
    if not IS_WINDOWS:
        (root / "run.sh").chmod(0o644)
        (root / "link").unlink()
        os.symlink("t1.txt", root / "link")
    to_id = ws.snapshot().id
    for i in range(0, 8, 2):   # later edits far from the turn's
        (root / f"t{i}.txt").write_text(_edit(LINES, (5, f"turn {i}"), (30, "later")), newline="")
    (root / "t7.txt").write_text(_edit(LINES, (5, "later, same line")), newline="")  # conflicts
    return root, ws, from_id, to_id


def test_revert_killed_at_every_step_is_finished_or_rolled_back(tree_factory, tmp_path):
    root, ws, from_id, to_id = _history(tree_factory)
    old_state = disk_state(root)
    old_id = ws.snapshot().id
    merged = ws.revert(from_id, to_id, merge=True)
    assert merged.conflicts == ["t7.txt"]
    new_state = disk_state(root)
    assert ws.restore(old_id).target == old_id
    marker = str(tmp_path / "stalled")
    k = 0
    while True:
        k += 1
        assert disk_state(root) == old_state
        proc = _spawn(REVERT, str(root), from_id, to_id, stall_at=k, marker=marker)
        if not _run_until_stall(proc, marker):
            break
        assert os.path.exists(journal_path(ws.store)), f"step {k}: no journal"
        _assert_each_file_old_or_new(root, old_state, new_state)
        if k % 2:   # the next command finishes the revert
            with Workspace(root) as again:
                assert again.snapshot().id == merged.target, f"step {k}"
                assert disk_state(root) == new_state, f"step {k}"
                assert temp_files(root) == []
                again.restore(old_id)
        else:       # or it is rolled back
            with Workspace(root) as again:
                result = again.abort_restore()
                assert result is not None and result.target == old_id, f"step {k}"
                assert disk_state(root) == old_state, f"step {k}"
                assert temp_files(root) == []
        assert not os.path.exists(journal_path(ws.store))
    assert disk_state(root) == new_state
    assert k > 10, f"only {k - 1} stall points: the hook did not cover the revert"
    ws.close()
