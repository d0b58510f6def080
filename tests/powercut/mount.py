"""Mounting the power-cut file system for a test: start the daemon, talk to it, cut, remount.

`PowerCut(backing, mountpoint, model, symlinks=True)` mounts (`symlinks=False`: one that
refuses symlinks, as vfat does; `frozen_folder_times=True`: folders whose times never move, as
object-store mounts report them); `.events()` counts fsyncs so far; `.arm(n)` cuts
after the n-th; `.cut()` cuts now, unmounts (the daemon then rewrites the backing folder to what
survived) and mounts again, as a machine that lost power and came back. `skip_reason()` says why
this machine cannot run it (no /dev/fuse, not root, no fusermount3, no binding, not Linux).
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def skip_reason() -> str | None:
    """Why power-cut tests cannot run here, or None."""
    if not sys.platform.startswith("linux"):
        return "the power-cut file system needs Linux FUSE"
    if not os.path.exists("/dev/fuse"):
        return "no /dev/fuse on this machine"
    if os.geteuid() != 0:
        return "mounting the power-cut file system needs root"
    if shutil.which("fusermount3") is None:
        return "no fusermount3 (Debian package fuse3)"
    try:
        import mfusepy  # noqa: F401
    except (ImportError, OSError) as err:
        return f"no FUSE binding (pip install 'undostore[powercut]'): {err}"
    return None


class PowerCut:
    """One mounted power-cut file system over `backing` at `mountpoint`."""

    def __init__(self, backing: str, mountpoint: str, model: str = "ordered",
                 symlinks: bool = True, frozen_folder_times: bool = False) -> None:
        self.backing, self.mountpoint, self.model = backing, mountpoint, model
        self.symlinks = symlinks
        self.frozen_folder_times = frozen_folder_times
        self.control = os.path.join(os.path.dirname(backing), f".powercut-{os.getpid()}.sock")
        # The daemon's output goes to a file: a pipe nobody reads until the unmount would fill
        # and stall every operation on the mount.
        self.log = backing.rstrip("/") + ".log"
        os.makedirs(backing, exist_ok=True)
        os.makedirs(mountpoint, exist_ok=True)
        self.proc: subprocess.Popen | None = None
        self.mounts = 0
        self.mount()

    # --- mounting -----

    def mount(self) -> None:
        if os.path.exists(self.control):
            os.unlink(self.control)
        env = {**os.environ, "PYTHONPATH": REPO, "PYTHONWARNINGS": "ignore"}
        with open(self.log, "wb") as log:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "tests.powercut.fs", self.backing, self.mountpoint,
                 "--model", self.model, "--control", self.control,
                 *([] if self.symlinks else ["--no-symlinks"]),
                 *(["--frozen-folder-times"] if self.frozen_folder_times else [])],
                cwd=REPO, env=env, stdin=subprocess.DEVNULL, stdout=log, stderr=log)
        deadline = time.monotonic() + 30
        while not (os.path.ismount(self.mountpoint) and os.path.exists(self.control)):
            if self.proc.poll() is not None:
                raise RuntimeError(f"the power-cut daemon ended: {self._tail()}")
            if time.monotonic() > deadline:
                self.unmount()
                raise RuntimeError("the power-cut file system did not mount in 30 s")
            time.sleep(0.02)
        self.mounts += 1

    def unmount(self) -> str:
        """Unmount (lazily if something still holds it) and wait for the daemon: its last line."""
        if self.proc is None:
            return ""
        proc, self.proc = self.proc, None
        if os.path.ismount(self.mountpoint):
            done = subprocess.run(["fusermount3", "-u", self.mountpoint], capture_output=True)
            if done.returncode != 0:
                subprocess.run(["fusermount3", "-u", "-z", self.mountpoint], capture_output=True)
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()   # libfuse catches SIGTERM; only SIGKILL ends a stuck daemon
            proc.wait()
        if proc.returncode != 0:
            raise RuntimeError(f"the power-cut daemon failed: {self._tail()}")
        return self._tail().splitlines()[-1] if self._tail() else ""

    def _tail(self) -> str:
        with open(self.log, "rb") as f:
            return f.read()[-4000:].decode(errors="replace").strip()

    def close(self) -> None:
        try:
            self.unmount()
        finally:
            if os.path.ismount(self.mountpoint):
                subprocess.run(["fusermount3", "-u", "-z", self.mountpoint], capture_output=True)

    # --- the daemon's controls -----

    def ask(self, line: str) -> str:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
            conn.connect(self.control)
            with conn.makefile("rw", encoding="utf-8") as f:
                f.write(line + "\n")
                f.flush()
                return f.readline().strip()

    def events(self) -> int:
        return int(self.ask("events"))

    def arm(self, after: int) -> None:
        """Cut after the `after`-th fsync since this mount."""
        self.ask(f"arm {after}")

    def frozen(self) -> bool:
        return self.ask("frozen") == "yes"

    def cut(self) -> str:
        """Power off (keeping only what was durable at the armed point, or now) and back on."""
        self.ask("cut")
        line = self.unmount()
        self.mount()
        return line

    def path(self, *parts: str) -> str:
        return os.path.join(self.mountpoint, *parts)
