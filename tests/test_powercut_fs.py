"""The power-cut file system itself: it loses what a disk would lose at a power cut (an
unsynced write, an unsynced rename, under the strict model a name whose folder was not synced)
and keeps what was synced, so the suites that run undostore on it prove something."""

from __future__ import annotations

import ctypes
import os

import pytest

from tests.powercut.fixture import powercut  # noqa: F401 (fixture)


def _write(path: str, data: str, sync: bool) -> None:
    with open(path, "w", encoding="utf-8") as f:
        f.write(data)
        f.flush()
        if sync:
            os.fsync(f.fileno())


def _sync_folder(path: str) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _read(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8") as f:
            return f.read()
    except FileNotFoundError:
        return None


@pytest.mark.parametrize("model", ["ordered", "strict"])
def test_a_cut_keeps_synced_bytes_and_loses_unsynced_ones(powercut, model):  # noqa: F811
    fs = powercut(model)
    _write(fs.path("kept"), "v1", sync=True)
    _sync_folder(fs.mountpoint)
    _write(fs.path("kept"), "v2 not synced", sync=False)
    _write(fs.path("never-synced"), "new", sync=False)
    fs.cut()
    assert _read(fs.path("kept")) == "v1"
    assert _read(fs.path("never-synced")) in (None, "")   # gone, or empty (its name committed)
    assert "never-synced" not in os.listdir(fs.mountpoint)


@pytest.mark.parametrize("model", ["ordered", "strict"])
def test_an_unsynced_rename_is_lost_and_a_synced_one_kept(powercut, model):  # noqa: F811
    fs = powercut(model)
    for name in ("a", "b"):
        _write(fs.path(name), name, sync=True)
    _sync_folder(fs.mountpoint)
    os.rename(fs.path("a"), fs.path("a2"))
    _sync_folder(fs.mountpoint)
    os.rename(fs.path("b"), fs.path("b2"))
    fs.cut()
    assert sorted(os.listdir(fs.mountpoint)) == ["a2", "b"]


def test_ordered_any_fsync_commits_every_earlier_name_change(powercut):  # noqa: F811
    fs = powercut("ordered")
    os.mkdir(fs.path("sub"))
    _write(fs.path("sub", "f"), "data", sync=True)   # commits sub/ and sub/f with it
    fs.cut()
    assert _read(fs.path("sub", "f")) == "data"


def test_strict_a_name_counts_only_once_its_folder_is_synced(powercut):  # noqa: F811
    fs = powercut("strict")
    os.mkdir(fs.path("sub"))
    _write(fs.path("sub", "f"), "data", sync=True)
    _sync_folder(fs.path("sub"))   # sub/ holds f durably, but sub itself was never committed
    os.mkdir(fs.path("other"))
    _write(fs.path("other", "g"), "data", sync=True)
    _sync_folder(fs.path("other"))
    _sync_folder(fs.mountpoint)    # now other/ is durable, and sub/ with it
    os.rename(fs.path("other", "g"), fs.path("g"))
    _sync_folder(fs.mountpoint)    # g is named in / durably, but other/ still lists it
    fs.cut()
    assert _read(fs.path("sub", "f")) == "data"
    assert _read(fs.path("g")) == "data"
    assert os.listdir(fs.path("other")) == ["g"]   # a hard-link-like leftover, as on a disk


def test_strict_a_new_folder_vanishes_with_everything_in_it(powercut):  # noqa: F811
    fs = powercut("strict")
    os.mkdir(fs.path("sub"))
    _write(fs.path("sub", "f"), "data", sync=True)
    _sync_folder(fs.path("sub"))
    fs.cut()
    assert os.listdir(fs.mountpoint) == []


def test_a_cut_can_be_armed_at_the_nth_fsync(powercut):  # noqa: F811
    fs = powercut("ordered")
    start = fs.events()
    for version in range(1, 5):
        _write(fs.path("f"), f"v{version}", sync=True)
    fs.arm(start + 2)
    # armed after the fact: the point has passed, so it froze at once (v4 durable). Arm first:
    fs.cut()
    assert _read(fs.path("f")) == "v4"
    start = fs.events()
    fs.arm(start + 2)
    for version in range(5, 9):
        _write(fs.path("f"), f"v{version}", sync=True)
    assert fs.frozen()
    fs.cut()
    assert _read(fs.path("f")) == "v6"


def test_syncfs_and_sync_never_reach_the_daemon(powercut):  # noqa: F811
    """The kernel fact the restore's durability rests on: syncfs makes nothing durable here."""
    fs = powercut("ordered")
    _write(fs.path("f"), "old", sync=True)
    _write(fs.path("f"), "new", sync=False)
    fd = os.open(fs.mountpoint, os.O_RDONLY)
    try:
        assert ctypes.CDLL(None, use_errno=True).syncfs(fd) == 0
    finally:
        os.close(fd)
    os.sync()
    fs.cut()
    assert _read(fs.path("f")) == "old"


def test_rename_exchange_and_hard_links_pass_through(powercut):  # noqa: F811
    libc = ctypes.CDLL(None, use_errno=True)
    fs = powercut("ordered")
    _write(fs.path("a"), "A", sync=True)
    _write(fs.path("b"), "B", sync=True)
    os.link(fs.path("a"), fs.path("a-link"))
    assert libc.renameat2(-100, os.fsencode(fs.path("a")), -100, os.fsencode(fs.path("b")),
                          2) == 0
    _sync_folder(fs.mountpoint)
    fs.cut()
    assert (_read(fs.path("a")), _read(fs.path("b")), _read(fs.path("a-link"))) == ("B", "A", "A")
    assert os.stat(fs.path("b")).st_nlink == 2


@pytest.mark.parametrize("model", ["ordered", "strict"])
def test_a_chmod_counts_once_committed(powercut, model):  # noqa: F811
    fs = powercut(model)
    for name in ("x", "y", "other"):
        _write(fs.path(name), name, sync=True)
    _sync_folder(fs.mountpoint)
    os.chmod(fs.path("x"), 0o755)
    os.chmod(fs.path("y"), 0o755)
    fd = os.open(fs.path("y"), os.O_RDONLY)
    os.fsync(fd)   # y's own fsync commits its bits in both models
    os.close(fd)
    _write(fs.path("other"), "other", sync=True)   # ordered: commits x's chmod too
    os.chmod(fs.path("other"), 0o700)               # never committed
    fs.cut()
    modes = {n: os.stat(fs.path(n)).st_mode & 0o777 for n in ("x", "y", "other")}
    x_mode = 0o755 if model == "ordered" else 0o644
    assert modes == {"x": x_mode, "y": 0o755, "other": 0o644}
