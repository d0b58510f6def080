"""Small packs merged as they pile up (store/packmerge.py): a turn's tool calls each write packs,
and every reader opens them all. Past `MERGE_AT` small packs the next capture merges them into
one: every snapshot stays whole (verify, and git reading the merged pack), the stat cache still
vouches for its files (a no-change snapshot reads none), and the count stays bounded."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from undostore import ToolCall, Workspace
from undostore.git.packfile import complete_packs
from undostore.history.toolcall import FILE, SHELL
from undostore.store.packmerge import MERGE_AT
from undostore.store.statcache import StatCache


def _packs(ws: Workspace) -> list[str]:
    return complete_packs(ws.store.pack_dir)


def test_a_sessions_tool_calls_leave_a_bounded_number_of_packs(tree_factory):
    root = tree_factory({f"f{i}.txt": f"{i}\n" for i in range(10)})
    ids = []
    with Workspace(root) as ws:
        ws.snapshot(session="s", label="work")
        most = 0
        for i in range(40):
            kind = SHELL if i % 4 == 3 else FILE
            path = f"f{i % 10}.txt"
            ws.call_started(ToolCall(f"c{i}", "Bash" if kind == SHELL else "Edit", kind,
                                     () if kind == SHELL else (path,)), "s")
            (root / path).write_text(f"call {i}\n")
            ws.call_finished(f"c{i}", "s")
            most = max(most, len(_packs(ws)))
            ids.append(ws.snapshot().id)
        assert most <= MERGE_AT + 4, most   # without merging: 3 or more packs per call
        for i in range(10):   # out of racy-git's reach: the next snapshot trusts the cache
            os.utime(root / f"f{i}.txt", (1_700_000_000, 1_700_000_000))
        time.sleep(0.2)   # past the racy window of the files' ctime (set just now by utime)
        ws.snapshot()
        merges = 0
        for i in range(MERGE_AT + 2):   # packs enough for a merge, after the cache was saved
            count = len(_packs(ws))
            ws.call_started(ToolCall(f"m{i}", "Edit", FILE, ("f0.txt",)), "s")
            (root / "f0.txt").write_text(f"m{i}\n")
            ws.call_finished(f"m{i}", "s")
            if len(_packs(ws)) < count:   # merged: the cache, told where, still vouches
                merges += 1
                cache = StatCache.load(ws.store.stat_cache_path, ws.store.identity)
                assert cache.root is not None
                assert cache.trusted_with(ws.store.index.pack_names())
        assert merges
        assert ws.snapshot().hashed == 1     # f0.txt; the rest as the cache has them
        checked = ws.verify()
        assert checked.ok, checked
        for snapshot_id in (ids[0], ids[17], ids[-1]):
            assert ws.verify(snapshot_id).ok
        ws.undo("s", confirm=lambda plan: True)   # the turn's segments, read after merges
    assert all((root / f"f{i}.txt").read_text() == f"{i}\n" for i in range(10))


@pytest.mark.skipif(shutil.which("git") is None, reason="git reads the merged pack")
def test_git_reads_every_object_of_a_merged_pack(tree_factory, tmp_path):
    root = tree_factory({"a.txt": "a\n"})
    with Workspace(root) as ws:
        for i in range(MERGE_AT + 3):
            (root / "a.txt").write_text(f"{i}\n")
            ws.snapshot(session="s", label=f"turn {i}")
        packs = _packs(ws)
        assert len(packs) < MERGE_AT, packs
        biggest = max(packs, key=lambda base: Path(base + ".pack").stat().st_size)
    git = shutil.which("git")
    bare = tmp_path / "check.git"
    subprocess.run([git, "init", "-q", "--bare", str(bare)], check=True)
    done = subprocess.run([git, "--git-dir", str(bare), "verify-pack", "-v", biggest + ".idx"],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "blob" in done.stdout and "tree" in done.stdout
