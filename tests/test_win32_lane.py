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
