"""A project and its store on one power-cut file system, driven through the real CLI.

`Rig(fs)` puts the root at <mount>/root and UNDOSTORE_HOME at <mount>/home; `rig.cli(...)` runs
`python -m undostore --json --root ROOT ...` as a subprocess (cwd outside the mount, so a cut can
unmount); `rig.settle()` fsyncs every file and folder, as a machine that ran long enough for
everything to reach the disk; `rig.files()` reads the tree; `rig.checked_cut()` cuts and asserts
every file the cut left is at `old` or `new` content. `CHILD` runs one library call with a
checkpoint that cuts at the k-th checkpoint named `what` (the crash tests' checkpoints).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.powercut.mount import REPO, PowerCut
from tests.restore_support import disk_state

TEMP = ".undostore-tmp-"


def fsync_path(path: str) -> None:
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def settle(top: str) -> None:
    """fsync every file and folder under `top`, and `top`'s own name."""
    for folder, _, files in os.walk(top, topdown=False):
        for name in files:
            full = os.path.join(folder, name)
            if not os.path.islink(full):
                fsync_path(full)
        fsync_path(folder)
    fsync_path(os.path.dirname(top))


class Rig:
    def __init__(self, fs: PowerCut, outside: Path) -> None:
        self.fs = fs
        self.outside = str(outside)
        self.root = fs.path("root")
        self.home = fs.path("home")
        os.makedirs(self.root, exist_ok=True)
        os.makedirs(self.home, exist_ok=True)
        settle(self.fs.mountpoint)
        self.env = {**os.environ, "UNDOSTORE_HOME": self.home, "PYTHONPATH": REPO}

    def cli(self, *args: str, ok: bool = True) -> subprocess.CompletedProcess[str]:
        done = subprocess.run([sys.executable, "-m", "undostore", "--json", "--root", self.root,
                               *args], capture_output=True, text=True, cwd=self.outside,
                              env=self.env, timeout=120)
        if ok:
            assert done.returncode == 0, (args, done.returncode, done.stdout, done.stderr)
        return done

    def json(self, *args: str) -> dict:
        return json.loads(self.cli(*args).stdout)

    def child(self, op: str, what: str, k: int, *args: str) -> subprocess.CompletedProcess[str]:
        """One library call in a child that cuts at its k-th checkpoint named `what`."""
        return subprocess.run([sys.executable, "-c", CHILD, self.fs.control, what, str(k), op,
                               self.root, *args], capture_output=True, text=True,
                              cwd=self.outside, env=self.env, timeout=120)

    def settle(self) -> None:
        settle(self.fs.mountpoint)

    def files(self) -> dict:
        return disk_state(self.root)

    def store_files(self) -> list[str]:
        found = []
        for folder, _, files in os.walk(self.home):
            found += [os.path.relpath(os.path.join(folder, n), self.home) for n in files]
        return sorted(found)

    def cut(self) -> None:
        self.fs.cut()

    def checked_cut(self, old: dict, new: dict) -> dict:
        """Cut; every path is then at its old or its new content (or a temp of the restore)."""
        self.fs.cut()
        now = self.files()
        for path, value in now.items():
            if path.endswith("/") or any(part.startswith(TEMP) for part in path.split("/")):
                continue
            assert value in (old.get(path), new.get(path)), (
                f"{path} is neither old nor new after the cut: {value!r}")
        for path in old.keys() & new.keys():
            if not path.endswith("/"):
                assert path in now, f"{path} is missing after the cut (in both states)"
        return now


# The child: one restore, undo, redo or revert through the library (as the CLI makes it), with
# a checkpoint that asks the file system to cut at its k-th checkpoint named `what`; the call
# runs on to its end (what it does after the cut is lost with the power).
CHILD = """
import socket, sys
from undostore import Workspace
control, what, k, op, root, *rest = sys.argv[1:]
k, seen = int(k), 0
def checkpoint(name, path):
    global seen
    if name == what:
        seen += 1
        if seen == k:
            with socket.socket(socket.AF_UNIX) as conn:
                conn.connect(control)
                conn.sendall(b"cut\\n")
                conn.recv(100)
            print("cut at", name, path)
ws = Workspace(root)
ws.checkpoint = checkpoint
if op == "restore":
    ws.restore(rest[0])
elif op == "undo":
    ws.undo("s")
elif op == "redo":
    ws.redo("s")
elif op == "revert":
    ws.revert(rest[0], rest[1])
print("done")
"""
