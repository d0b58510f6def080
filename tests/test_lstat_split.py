"""A big no-change walk's lstats in two processes (undostore/snapshot/lstatsplit.py): a real
forked child, really killed, stopped or outrun; every snapshot checked against git's tree.

The split is forced on small trees by the limits (`split_lstat_min_files=0`, chunks of a few
files), so each case runs in a moment."""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from undostore import Workspace
from undostore.limits import Limits

from .conftest import make_tree
from .process_support import until_exited

pytestmark = pytest.mark.skipif(not hasattr(os, "pidfd_open"),
                                reason="the split needs fork; the tests kill through pidfds")

SPLIT = Limits(split_lstat_min_files=0, split_chunk_files=4)
SETTLE = 2.1   # older than the racy window: the stamps and entries saved are trusted


def tree(root: Path) -> Path:
    spec: dict = {f"d{d:02}": {f"f{f:02}.txt": f"{d} {f}" for f in range(10)} for d in range(24)}
    spec["big"] = {f"b{f:03}.txt": f"big {f}" for f in range(60)}
    spec["d03"]["deep"] = {"x.txt": "x", "y": {"z.txt": "z"}}
    spec[".gitignore"] = "*.log\n"
    return make_tree(root, spec)


def settled(ws: Workspace) -> None:
    """Two snapshots, the second once everything is old enough to be trusted."""
    ws.snapshot()
    time.sleep(SETTLE)
    ws.snapshot()


def forks(into: list[int], then: Callable[[int], None] | None = None,
          child_first: Callable[[], None] | None = None) -> Callable[[], int]:
    """os.fork, noting each child's pid; in the parent, `then(pid)` right after; in the child,
    `child_first()` before it does anything."""
    def fork() -> int:
        pid = os.fork()
        if pid:
            into.append(pid)
            if then is not None:
                then(pid)
        elif child_first is not None:
            child_first()
        return pid
    return fork


def kill_later(delay: float, timers: list[threading.Timer]) -> Callable[[int], None]:
    """SIGKILL for the child after `delay`, through a pidfd opened while it is ours, so a
    timer firing after it was reaped signals nothing (no other process that took its pid)."""
    def start(pid: int) -> None:
        handle = os.pidfd_open(pid)

        def kill() -> None:
            try:
                signal.pidfd_send_signal(handle, signal.SIGKILL)
            except ProcessLookupError:
                pass   # already reaped
            finally:
                os.close(handle)

        timer = threading.Timer(delay, kill)
        timers.append(timer)
        timer.start()
    return start


def reaped(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


def test_the_second_process_vouches_for_unchanged_chunks_and_the_ids_stay_gits(tmp_path, git):
    root = tree(tmp_path / "t")
    with Workspace(root, store=tmp_path / "store", limits=SPLIT) as ws:
        settled(ws)
        children: list[int] = []
        ws.fork = forks(children, until_exited)   # every answer in before the walk starts
        quiet = ws.snapshot()
        assert quiet.vouched > 0 and quiet.hashed == 0
        assert quiet.id == git.write_tree(root)
        # Changes the walk must find wherever they fall: in place (the folder's time stays),
        # in the big folder's first and last chunks, a new file, a removed one, a mode.
        (root / "d00" / "f03.txt").write_text("changed in place")
        (root / "d23" / "f09.txt").write_text("changed in place too")
        (root / "big" / "b000.txt").write_text("first chunk")
        (root / "big" / "b059.txt").write_text("last chunk")
        (root / "d10" / "new.txt").write_text("new")
        (root / "d11" / "f00.txt").unlink()
        (root / "d12" / "f05.txt").chmod(0o755)
        (root / "d03" / "deep" / "y" / "z.txt").write_text("deep")
        changed = ws.snapshot()
        assert changed.id == git.write_tree(root)
        assert len(children) == 2 and all(reaped(pid) for pid in children)


def test_a_second_process_killed_at_any_point_leaves_no_change_unseen(tmp_path, git):
    """The child killed before it starts, while it answers and after it is done: each
    snapshot still finds the changes made before it began (an answer cut short is none)."""
    root = tree(tmp_path / "t")
    with Workspace(root, store=tmp_path / "store", limits=SPLIT) as ws:
        settled(ws)
        for round_no, delay in enumerate((0.0, 0.0005, 0.001, 0.002, 0.004, 0.008, 0.02, 1.0)):
            children: list[int] = []
            timers: list[threading.Timer] = []
            ws.fork = forks(children, kill_later(delay, timers))
            for d in (round_no, 23 - round_no):
                (root / f"d{d:02}" / "f01.txt").write_text(f"round {round_no}")
            (root / "big" / f"b{round_no * 7:03}.txt").write_text(f"round {round_no}")
            result = ws.snapshot()
            for timer in timers:
                timer.join()
            assert result.id == git.write_tree(root), delay
            assert children and all(reaped(pid) for pid in children)


def test_a_stopped_second_process_is_never_waited_for_and_is_reaped(tmp_path, git):
    root = tree(tmp_path / "t")
    with Workspace(root, store=tmp_path / "store", limits=SPLIT) as ws:
        settled(ws)
        children: list[int] = []
        # Stopped by itself before its first answer (a SIGSTOP sent by the parent may come after
        # the child already answered on a busy machine: one run in the suite did).
        ws.fork = forks(children, child_first=lambda: os.kill(os.getpid(), signal.SIGSTOP))
        (root / "d05" / "f05.txt").write_text("while it was stopped")
        result = ws.snapshot()
        assert result.vouched == 0
        assert result.id == git.write_tree(root)
        assert all(reaped(pid) for pid in children)


def test_a_folder_changed_after_the_second_process_vouched_for_it_is_read(tmp_path, git):
    """The child is done (every answer written) before the walk goes on; then a file is
    added to one folder it vouched for and another file renamed over in a second: the folders'
    own stamps moved, so the walk reads them, whatever the child said."""
    root = tree(tmp_path / "t")
    with Workspace(root, store=tmp_path / "store", limits=SPLIT) as ws:
        settled(ws)

        def after_the_child(pid: int) -> None:
            until_exited(pid)
            (root / "d00" / "late.txt").write_text("added after the child looked")
            (root / "d01" / "tmp").write_text("renamed over after the child looked")
            os.replace(root / "d01" / "tmp", root / "d01" / "f02.txt")

        children: list[int] = []
        ws.fork = forks(children, after_the_child)
        result = ws.snapshot()
        assert result.vouched > 0
        assert result.id == git.write_tree(root)


def test_a_file_changed_in_place_after_the_child_looked_is_found_by_the_next_snapshot(
        tmp_path, git):
    """What the child vouched for was so after the snapshot began (a change after that may
    fall either side of it, as a file changed behind a one-process walk does); the entry kept
    is the one it matched, so the next snapshot finds the change."""
    root = tree(tmp_path / "t")
    with Workspace(root, store=tmp_path / "store", limits=SPLIT) as ws:
        settled(ws)
        before = ws.snapshot().id

        def after_the_child(pid: int) -> None:
            until_exited(pid)
            with open(root / "d00" / "f00.txt", "r+") as f:   # the folder's time stays
                f.write("9")

        ws.fork = forks([], after_the_child)
        first = ws.snapshot()
        assert first.id in (before, git.write_tree(root))
        ws.fork = None
        assert ws.snapshot().id == git.write_tree(root) != before


def test_the_command_line_and_the_hook_may_fork_the_mcp_server_may_not(tmp_path):
    from undostore_cli.door import open_workspace
    from undostore_cli.plain import Options
    from undostore_cli.signals import fork_alone

    root = make_tree(tmp_path / "t", {"a.txt": "a"})
    options = Options(str(root), None, False)
    with open_workspace(options, lambda said: None) as ws:
        assert ws.fork is fork_alone
    with open_workspace(options, lambda said: None, may_fork=False) as ws:
        assert ws.fork is None
    # Where another thread runs, fork_alone declines (a fork copies only the calling thread).
    release = threading.Event()
    other = threading.Thread(target=release.wait)
    other.start()
    try:
        assert fork_alone() is None
    finally:
        release.set()
        other.join()
