"""The kill-at-every-step harness the crash suites share: a child that runs one restore, undo,
revert, recovery or abort and stalls at its k-th file operation, the loop that kills it there,
and the check that every file holds its old or its new content."""

from __future__ import annotations

import os
import subprocess
import sys
import time

from undostore import Workspace

from .conftest import IS_WINDOWS, Exe, Link
from .restore_support import disk_state

# The child: one restore, recovery, abort, undo or revert, stalling at its k-th file operation
# (0: never) through the checkpoint callable it hands the library.
CHILD = """
import dataclasses, os, sys, time
from undostore import Workspace
from undostore.restore.restore import abort_pending, recover_pending, restore
op, stall_at, marker, root, *rest = sys.argv[1:]
stall_at = int(stall_at)
count = 0
def stall(what, path):
    global count
    if what.startswith("before "):
        return
    count += 1
    if count == stall_at:
        with open(marker, "w", encoding="utf-8") as f:
            f.write(f"{count} {what} {path}\\n")
        time.sleep(600)
ws = Workspace(root)
wt = dataclasses.replace(ws._worktree(), checkpoint=stall)
if op == "restore":
    restore(wt, rest[0])
elif op == "undo":   # of session "s", one turn or rest[0] turns
    from undostore.history.sessions import undo
    undo(wt, "s", steps=int(rest[0]) if rest else 1)
elif op == "undo-paths":   # of session "s": the last turn's paths rest
    from undostore import Direction
    from undostore.history.sessions import step
    step(wt, "s", Direction.UNDO, paths=rest)
elif op == "undo-hunks":   # of session "s": the first hunk of each text file of the last turn
    from undostore import Direction, Picked
    from undostore.history.sessions import held_files, step
    picks = [held.pick(ws.store, Picked(hunks=held.change.hunks[:1]), Direction.UNDO)
             for held in held_files(wt, "s", Direction.UNDO) if held.change.hunks]
    step(wt, "s", Direction.UNDO, picks=picks)
elif op == "revert":
    from undostore.restore.revert import revert
    revert(wt, rest[0], rest[1], merge=True)
elif op == "recover":
    with ws.store.lock:
        recover_pending(wt)
    ws.snapshot()
else:
    abort_pending(wt)
"""


RESTORE, RECOVER, ABORT = "restore", "recover", "abort"


def spawn(op: str, root: str, *args: str, stall_at: int = 0, marker: str = ""
           ) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", CHILD, op, str(stall_at), marker or "-",
                             root, *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)


def run_until_stall(proc: subprocess.Popen, marker: str, timeout: float = 120) -> bool:
    """True once the child waits at its stall point (then it is killed); False if it ended."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if os.path.exists(marker):
            proc.kill()
            proc.wait()
            os.unlink(marker)
            return True
        if proc.poll() is not None:
            out, err = proc.communicate()
            assert proc.returncode == 0, err.decode()
            return False
        time.sleep(0.01)
    proc.kill()
    raise AssertionError("the child neither stalled nor finished")


def assert_each_file_old_or_new(root, old: dict, new: dict) -> None:
    for path, value in disk_state(root).items():
        if path.endswith("/") or any(part.startswith(".undostore-tmp-")
                                     for part in path.split("/")):
            continue  # the restore's temp files, and new folders it stages whole
        assert value in (old.get(path), new.get(path)), f"{path} holds a mix: {value!r}"
    present = disk_state(root)
    for path in old.keys() | new.keys():
        if path.endswith("/"):
            continue
        if path not in present:
            assert path not in old or path not in new, f"{path} is missing (in both states)"


LINES = "".join(f"line {i}\n" for i in range(1, 41))


def edited(text: str, *changes: tuple[int, str]) -> str:
    lines = text.splitlines(keepends=True)
    for number, new in changes:
        lines[number - 1] = new + "\n"
    return "".join(lines)


def revert_history(tree_factory):
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
        (root / f"t{i}.txt").write_text(edited(LINES, (5, f"turn {i}")), newline="")
    (root / "gone.txt").unlink()
    (root / "added.txt").write_text("added by the turn\n", newline="")
    (root / "sub" / "deep.txt").write_text(edited(LINES, (2, "turn")), newline="")
    if not IS_WINDOWS:
        (root / "run.sh").chmod(0o644)
        (root / "link").unlink()
        os.symlink("t1.txt", root / "link")
    to_id = ws.snapshot().id
    for i in range(0, 8, 2):   # later edits far from the turn's
        (root / f"t{i}.txt").write_text(edited(LINES, (5, f"turn {i}"), (30, "later")), newline="")
    (root / "t7.txt").write_text(edited(LINES, (5, "later, same line")), newline="")  # conflicts
    return root, ws, from_id, to_id
