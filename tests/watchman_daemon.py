"""A private watchman daemon for the test session: its own socket, state, log and pid files in a
temp folder, started once and shut down after. Never the user's daemon.

`watchman_daemon` (session) is the running daemon; `watchman_env` (per test) points
`WATCHMAN_SOCK` at it and sets `UNDOSTORE_FSMONITOR=watchman`. Both skip the test where the
`watchman` program or `pywatchman` is missing (Windows, a base install).
"""

from __future__ import annotations

import getpass
import os
import shutil
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import pytest


@dataclass
class Daemon:
    folder: Path
    sock: str
    process: subprocess.Popen | None = None

    def start(self) -> None:
        """Start (or restart) the daemon in the foreground as a child of the test process."""
        args = [shutil.which("watchman") or "watchman", "--foreground", f"--sockname={self.sock}",
                f"--statefile={self.folder / 'state'}", f"--logfile={self.folder / 'log'}",
                f"--pidfile={self.folder / 'pid'}", "--no-save-state", "--log-level=0"]
        if os.path.exists(self.sock):
            os.unlink(self.sock)
        log = open(self.folder / "out", "ab")  # noqa: SIM115 (the child keeps it open)
        self.process = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                                        start_new_session=True)
        log.close()
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            if self.answers():
                return
            if self.process.poll() is not None:
                break
            time.sleep(0.05)
        self.stop()
        pytest.skip(f"private watchman daemon did not start: {(self.folder / 'out').read_text()}")

    def answers(self) -> bool:
        import pywatchman

        try:
            client = pywatchman.client(sockpath=self.sock, timeout=2)
            client.query("version")
            client.close()
            return True
        except Exception:
            return False

    def kill(self) -> None:
        """SIGKILL: the daemon dies without a word, as a crash would."""
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait(10)

    def stop(self) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        self.process.terminate()
        try:
            self.process.wait(10)
        except subprocess.TimeoutExpired:
            self.kill()

    def ensure_running(self) -> None:
        if self.process is None or self.process.poll() is not None or not self.answers():
            self.kill()
            self.start()


@pytest.fixture(scope="session")
def watchman_daemon():
    if shutil.which("watchman") is None:
        pytest.skip("no watchman program (Debian: apt-get install watchman)")
    pytest.importorskip("pywatchman", reason="pywatchman not installed (extra undostore[watchman])")
    # A short folder name: a unix socket path is limited to ~108 bytes. The socket sits where
    # watchman looks by default when TMPDIR is this folder (`<TMPDIR>/<user>-state/sock`), so
    # tests can also exercise the default discovery, still on this private daemon.
    folder = Path(tempfile.mkdtemp(prefix="usw-"))
    state = folder / f"{getpass.getuser()}-state"
    state.mkdir(mode=0o700)
    daemon = Daemon(folder, str(state / "sock"))
    daemon.start()
    try:
        yield daemon
    finally:
        daemon.stop()
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def watchman_env(watchman_daemon: Daemon, monkeypatch: pytest.MonkeyPatch) -> Daemon:
    """The private daemon, running, named by WATCHMAN_SOCK, and mode `watchman`."""
    watchman_daemon.ensure_running()
    monkeypatch.setenv("WATCHMAN_SOCK", watchman_daemon.sock)
    monkeypatch.setenv("UNDOSTORE_FSMONITOR", "watchman")
    return watchman_daemon


# Why watchman itself may make a snapshot walk in full: its event queue overflowed (as on a
# loaded machine) and it recrawled, or it lost the clock. Any other reason is undostore's.
WATCHMAN_OWN_REASONS = ("watchman recrawled the tree", "watchman restarted or lost the clock")


def _walk(result: object) -> tuple[str, str]:
    """(walk, reason) of a SnapshotResult or of the CLI's `snapshot --json` report."""
    if isinstance(result, dict):
        return result["walk"], result["walk_reason"]
    return result.walk, result.walk_reason  # type: ignore[attr-defined]


def used_watchman(result: object) -> bool:
    """Whether a snapshot `result` read only what watchman reported, or walked in full for one
    of watchman's own reasons (then rightly)."""
    walk, reason = _walk(result)
    return walk == "watchman" or reason in WATCHMAN_OWN_REASONS


def expect_watchman(result: object, *context: object) -> object:
    """`result`, if it used watchman (`used_watchman`); else fail naming its walk, the reason
    it gave and `context`, so a full walk on a loaded machine says why."""
    if not used_watchman(result):
        walk, reason = _walk(result)
        raise AssertionError(f"walked {walk!r}: {reason}" + (f" {context}" if context else ""))
    return result
