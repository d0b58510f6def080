"""Checks that only mean something inside the Windows lane (bash .ci/win32-lane.sh).

The lane runs this suite under Windows CPython through Wine and sets
UNDOSTORE_EXPECT_WIN32=1; everywhere else these tests are skipped.
"""

import os
import shutil
import sys

import pytest

pytestmark = pytest.mark.skipif(
    os.environ.get("UNDOSTORE_EXPECT_WIN32") != "1",
    reason="only in the Windows lane (bash .ci/win32-lane.sh)",
)


def test_lane_runs_windows_cpython():
    assert sys.platform == "win32"
    assert os.name == "nt"


def test_lane_has_no_git():
    # The library and CLI must work without a git program: the lane proves git is absent.
    assert shutil.which("git") is None


def test_auto_change_detection_walks_without_watchman(tmp_path, monkeypatch):
    # No watchman program on Windows here: `auto` (the default) walks, silently.
    from undostore import Workspace

    monkeypatch.delenv("WATCHMAN_SOCK", raising=False)
    monkeypatch.delenv("UNDOSTORE_FSMONITOR", raising=False)
    (tmp_path / "root").mkdir()
    (tmp_path / "root" / "a.txt").write_text("a")
    with Workspace(tmp_path / "root", store=tmp_path / "store") as ws:
        result = ws.snapshot()
    assert result.walk == "full" and result.warnings == []
