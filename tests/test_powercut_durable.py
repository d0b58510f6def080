"""The syncfs-or-fsync decision (undostore/store/durable.py, restore/syncing.py): a root on
FUSE, or with a FUSE mount below it, takes the per-file fsync path; a local root keeps syncfs for
restores of many files, and fsyncs a few files one by one."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

from tests.powercut.fixture import powercut  # noqa: F401 (fixture)
from undostore.restore.syncing import RestoreSync
from undostore.store.durable import Durability, syncfs_reaches_disk, unwritten_bytes

linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"),
                                reason="syncfs is Linux's")


@linux_only
def test_a_local_root_keeps_syncfs(tmp_path):
    assert syncfs_reaches_disk(str(tmp_path))
    assert not Durability(str(tmp_path)).fsync_each_file


def test_a_root_on_fuse_or_with_fuse_below_it_fsyncs_each_file(powercut, tmp_path):  # noqa: F811
    fs = powercut("ordered")
    root = fs.path("root")
    os.makedirs(root)
    assert not syncfs_reaches_disk(root)
    assert Durability(root).fsync_each_file
    # a local root with the FUSE mount below it (fs.mountpoint is under tmp_path)
    assert not syncfs_reaches_disk(str(tmp_path))


@linux_only
@pytest.mark.skipif(shutil.which("strace") is None, reason="needs strace (CI installs it)")
def test_a_few_files_are_made_durable_one_by_one_and_many_with_one_syncfs(tmp_path, cli):
    """A restore of a few files while another program's writes wait to be written back fsyncs
    those files and their folders, never `syncfs`, which would wait for all of it; a restore of
    many keeps the one `syncfs` per batch. Seen in the real process's system calls."""
    root = tmp_path / "root"
    (root / "d").mkdir(parents=True)
    for i in range(60):
        (root / "d" / f"f{i}.txt").write_text(f"first {i}\n")
    first = json.loads(cli.run("snapshot", "--json", root=root).stdout)["id"]

    def calls_of_a_restore(changed: int) -> list[str]:
        for i in range(changed):
            (root / "d" / f"f{i}.txt").write_text(f"second {i}\n")
        trace = tmp_path / f"trace-{changed}"
        # Another program's 256 MB, not yet written back (far below the kernel's own threshold
        # for starting to write: 10% of memory).
        other = tmp_path / "another-program.dat"
        subprocess.run(["dd", "if=/dev/zero", f"of={other}", "bs=1M", "count=256",
                        "status=none"], check=True)
        assert unwritten_bytes() > RestoreSync.UNWRITTEN_BYTES
        done = subprocess.run(["strace", "-f", "-qq", "-e", "trace=syncfs,fsync,fdatasync",
                               "-o", str(trace), *cli.argv("restore", first, "--yes", root=root)],
                              capture_output=True, text=True)
        other.unlink()   # its pages are dropped, never written
        assert done.returncode == 0, done.stderr
        assert (root / "d" / "f0.txt").read_text() == "first 0\n"
        return [line.split(None, 1)[1].split("(")[0] for line in trace.read_text().splitlines()
                if "(" in line]

    few = calls_of_a_restore(3)
    assert "syncfs" not in few and few.count("fsync") >= 3, few
    many = calls_of_a_restore(RestoreSync.EACH_FILE_UP_TO + 10)
    assert "syncfs" in many, many
