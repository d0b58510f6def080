"""A restore onto a file system that refuses symlinks (vfat, exfat, SMB without unix extensions;
here the power-cut FUSE file system told to refuse them, a real mount) writes each link's target
as a file and warns; the snapshot after it then says what a fresh snapshot of those files says,
whether the restore recorded its writes in the stat cache (more than 256 paths) or not.
On Windows, which has the same fallback without the symlink privilege, the file stays a link
(as with git's core.symlinks=false): tests/test_restore_roundtrip.py."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from tests.powercut.fixture import powercut  # noqa: F401 (fixture)
from tests.restore_support import craft_snapshot
from undostore import Workspace
from undostore.restore.notices import Kind
from undostore.store.statcache import FINE_MARGIN_NS

PAUSE_S = 3 * FINE_MARGIN_NS / 1e9   # past it, the stat cache trusts a file written before


def _fresh_id(root: Path, tmp_path: Path) -> str:
    with Workspace(root, tmp_path / f"fresh-{time.monotonic_ns()}") as ws:
        return ws.snapshot().id


@pytest.mark.parametrize("others", [0, 300], ids=["hashed-after", "recorded"])
def test_a_link_written_as_a_file_snapshots_as_that_file(powercut, tmp_path,  # noqa: F811
                                                         others):
    fs = powercut(symlinks=False)
    root = Path(fs.path("root"))
    root.mkdir()
    with pytest.raises(PermissionError):
        os.symlink("a", root / "probe")   # the mount really refuses them
    (root / "a").write_text("1")
    many = root / "many"
    many.mkdir()
    for i in range(others):
        (many / f"f{i}").write_text(f"old {i}\n")
    ws = Workspace(root, tmp_path / "store")
    ws.snapshot()
    target = craft_snapshot(ws.store, {
        "a": b"1", "ln": (0o120000, b"a"), "d": {"up": (0o120000, b"../a")},
        "many": {f"f{i}": f"new {i}\n".encode() for i in range(others)}})
    result = ws.restore(target)
    assert sorted((w.path, w.kind) for w in result.warnings) == [
        ("d/up", Kind.SYMLINK), ("ln", Kind.SYMLINK)]
    assert (root / "ln").read_bytes() == b"a" and (root / "d" / "up").read_bytes() == b"../a"
    assert not os.path.islink(root / "ln")
    time.sleep(PAUSE_S)
    after = ws.snapshot().id
    assert after == _fresh_id(root, tmp_path) != target
    assert ws.snapshot().id == after
    ws.close()
