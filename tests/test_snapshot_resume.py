"""A first snapshot killed half-way keeps what it hashed (issue 47, item 5): the next one reads
only the rest, and its id is git's tree id of the files as they are then, also where a kept
file changed in between. And the hook says the first snapshot is being taken, and how far the
last try got."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from undostore import Workspace
from undostore.snapshot.resume import kept_path

FILES = 1500

# A child process's start: each file's read slowed by 2 ms.
SLOWED = """
import sys, time
from undostore.snapshot import hashing

read = hashing._Hasher.blob_of
def slow(self, entry):
    time.sleep(0.002)
    return read(self, entry)
hashing._Hasher.blob_of = slow
"""

# A first snapshot, slowed (3 s in all), checking every run of 64 files: killed once the first
# checkpoint is on disk, it is half-way at most.
SLOW_FIRST_SNAPSHOT = SLOWED + """
from undostore import Workspace
from undostore.limits import Limits
with Workspace(sys.argv[1], limits=Limits(hash_batch_files=64, checkpoint_s=0)) as ws:
    ws.snapshot()
"""


def _tree(root: Path) -> None:
    for i in range(FILES):
        folder = root / f"d{i % 10}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"f{i}.txt").write_text(f"file {i}\n" * 20)
    time.sleep(0.2)   # older than the racy margin (50 ms): a checkpoint may keep them


def _killed_half_way(root: Path) -> None:
    with Workspace(root) as ws:
        kept = kept_path(ws.store)
    proc = subprocess.Popen([sys.executable, "-c", SLOW_FIRST_SNAPSHOT, str(root)],
                            stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 60
        while not (os.path.exists(kept) and os.path.getsize(kept) > 0):
            assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
            assert time.monotonic() < deadline
            time.sleep(0.005)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
        if proc.stderr:
            proc.stderr.close()


@pytest.mark.skipif(sys.platform == "win32", reason="SIGKILL (POSIX)")
def test_a_first_snapshot_killed_half_way_is_resumed_not_started_over(tmp_path, git):
    root = tmp_path / "tree"
    _tree(root)
    _killed_half_way(root)
    with Workspace(root) as ws:
        kept = ws.first_snapshot_kept()
    assert kept is not None and 0 < kept.files < FILES
    changed = root / next(iter(kept.entries))           # a kept file changes in between
    changed.write_text(changed.read_text().upper())
    with Workspace(root) as ws:
        result = ws.snapshot()
        assert not os.path.exists(kept_path(ws.store))  # the stat cache vouches now
    assert result.files == FILES
    assert result.hashed == FILES - kept.files + 1, (result.hashed, kept.files)
    assert result.id == git.write_tree(root)
    with Workspace(root) as ws:
        assert ws.snapshot().hashed <= 1   # the file changed just before it may be racy


def test_a_kept_entry_is_taken_only_for_an_unchanged_file_whose_blob_the_store_holds(
        tmp_path):
    """What an earlier try kept is never trusted for a file rewritten since (its size kept),
    nor where the store no longer holds the blob (gc pruned it)."""
    from undostore.git.objects import BLOB, hash_object
    from undostore.snapshot.resume import Checkpoints, Kept, usable
    from undostore.store.statcache import ENTRY, make_entry

    root = tmp_path / "tree"
    _tree(root)
    a, b, c = sorted(p.relative_to(root).as_posix() for p in root.rglob("*.txt"))[:3]

    def blob(path: str) -> bytes:
        return hash_object(BLOB, (root / path).read_bytes())

    with Workspace(root) as ws:
        ws.snapshot()
        entries = {path: ENTRY.pack(*make_entry(os.lstat(root / path), 0o100644, sha))
                   for path, sha in ((a, blob(a)), (b, b"\1" * 20), (c, blob(c)))}
        (root / c).write_text((root / c).read_text().upper())   # same size, new times
        assert set(usable(Kept(dict(entries), 1.0), ws.store).entries) == {a, c}
        checkpoints = Checkpoints(ws.store, _NoWriter(), time.time_ns(), 0)  # type: ignore[arg-type]
        checkpoints.kept = Kept(entries, 1.0)
        assert checkpoints.take(a, os.lstat(root / a)) == blob(a)
        assert checkpoints.take(b, os.lstat(root / b)) is None   # the store lacks that blob
        assert checkpoints.take(c, os.lstat(root / c)) is None   # rewritten since


class _NoWriter:
    def checkpoint(self) -> None:
        return None


# The hook as a host runs it, slowed: a first snapshot that runs past the second after which
# the hook says it is under way.
SLOW_HOOK = SLOWED + """
from undostore_cli.entry import main
main(["hook"])
"""


@pytest.mark.skipif(sys.platform == "win32", reason="SIGKILL (POSIX)")
def test_the_hook_says_a_first_snapshot_is_taken_and_how_far_the_last_try_got(tmp_path):
    """A first snapshot that takes a while is said on stderr while it runs (a host that kills
    the hook at its timeout still has the line); a quick one, or any later one, says nothing."""
    event = {"session_id": "s1", "hook_event_name": "UserPromptSubmit", "prompt": "go"}

    def hook(root: Path, program: list[str]) -> subprocess.CompletedProcess[str]:
        done = subprocess.run([sys.executable, *program], input=json.dumps(
            {**event, "cwd": str(root)}), capture_output=True, text=True, timeout=120, cwd=root)
        assert (done.returncode, done.stdout) == (0, ""), done.stderr
        return done

    fresh = tmp_path / "fresh"
    _tree(fresh)
    assert hook(fresh, ["-c", SLOW_HOOK]).stderr == (
        "undostore: taking this folder's first snapshot: every file is read once (`undostore "
        "init` takes it ahead of the first prompt)\n")
    assert hook(fresh, ["-c", SLOW_HOOK]).stderr == ""

    stopped = tmp_path / "stopped"
    _tree(stopped)
    _killed_half_way(stopped)
    with Workspace(stopped) as ws:
        kept = ws.first_snapshot_kept()
    assert kept is not None
    said = hook(stopped, ["-c", SLOW_HOOK]).stderr
    assert said.startswith(f"undostore: taking this folder's first snapshot: resuming the last "
                           f"try, which kept {kept.files:,} files ("), said

    quick = tmp_path / "quick"   # a few files: done long before the second is up
    quick.mkdir()
    (quick / "a.txt").write_text("a\n")
    assert hook(quick, ["-m", "undostore", "hook"]).stderr == ""
