"""A real revert process killed at every step of its restore: until recovery each file holds its
old content (the files before the revert) or its new one (the merged result); the next command
finishes the revert to exactly the merged tree, or `abort_restore` rolls it back to exactly the
files before. Uses the harness of crash_support."""

from __future__ import annotations

import os

from undostore import Workspace
from undostore.restore.restorelog import journal_path

from .crash_support import (
    assert_each_file_old_or_new,
    revert_history,
    run_until_stall,
    spawn,
)
from .restore_support import disk_state, temp_files

REVERT = "revert"   # the crash child of crash_support reverts FROM TO with merge


def test_revert_killed_at_every_step_is_finished_or_rolled_back(tree_factory, tmp_path):
    root, ws, from_id, to_id = revert_history(tree_factory)
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
        proc = spawn(REVERT, str(root), from_id, to_id, stall_at=k, marker=marker)
        if not run_until_stall(proc, marker):
            break
        assert os.path.exists(journal_path(ws.store)), f"step {k}: no journal"
        assert_each_file_old_or_new(root, old_state, new_state)
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
