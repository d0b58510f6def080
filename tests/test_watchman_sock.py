"""Where the watchman daemon listens: asked once, remembered, and never trusted blindly
(undostore/snapshot/watchsock.py), against the real private daemon of tests/watchman_daemon.py.

The daemon's socket sits where watchman looks by default when TMPDIR is its folder, so with
WATCHMAN_SOCK unset the real `watchman get-sockname` finds it. Whether a process was started is
seen through Python's audit events (`subprocess.Popen`), and whether anyone connected to a
hostile socket through that socket's own accept queue.
"""

from __future__ import annotations

import json
import os
import socket
import sys
from pathlib import Path

import pytest

from undostore.snapshot import watchsock
from undostore.snapshot.watchman import Monitor

from .watchman_daemon import expect_watchman

pytestmark = pytest.mark.skipif(sys.platform == "win32",
                                reason="named pipes on Windows: nothing is remembered")

_spawned: list[str] | None = None


def _audit(event: str, args: tuple) -> None:
    if event == "subprocess.Popen" and _spawned is not None:
        _spawned.append(os.fsdecode(args[0]))


sys.addaudithook(_audit)


@pytest.fixture
def default_daemon(watchman_daemon, monkeypatch):
    """The private daemon, found the default way (no WATCHMAN_SOCK), mode auto."""
    watchman_daemon.ensure_running()
    monkeypatch.delenv("WATCHMAN_SOCK", raising=False)
    monkeypatch.setenv("TMPDIR", str(watchman_daemon.folder))
    monkeypatch.setenv("UNDOSTORE_FSMONITOR", "auto")
    return watchman_daemon


def _open_counting(root: Path, mode: str = "auto") -> tuple[Monitor | None, list[str]]:
    """Monitor.open, and the programs it started."""
    global _spawned
    _spawned = []
    try:
        monitor = Monitor.open(str(root), mode)
    finally:
        started, _spawned = _spawned, None
    return monitor, started


def _remembered() -> str | None:
    try:
        text = Path(watchsock.memory_path()).read_text()
    except FileNotFoundError:
        return None
    return text.rstrip("\n").partition("\n")[2]


def _plant(sock: str) -> None:
    """A memory naming `sock` under the right key, as a hostile writer could make it."""
    program = watchsock.find_program()
    assert program is not None
    path = Path(watchsock.memory_path())
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"{watchsock.memory_key(program)}\n{sock}\n")


def _listening(path: Path) -> socket.socket:
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(path))
    server.listen(8)
    server.setblocking(False)
    return server


def _connected(server: socket.socket) -> bool:
    try:
        conn, _ = server.accept()
    except BlockingIOError:
        return False
    conn.close()
    return True


def _root(tmp_path: Path) -> Path:
    root = tmp_path / "r"
    root.mkdir(exist_ok=True)
    return root


def test_the_socket_the_daemon_gave_is_remembered_and_no_program_starts_next_time(
        tmp_path, default_daemon):
    root = _root(tmp_path)
    first, started = _open_counting(root)
    assert first is not None and len(started) == 1  # asked `watchman get-sockname`
    first.close()
    assert _remembered() == default_daemon.sock
    mode = os.stat(watchsock.memory_path()).st_mode & 0o777
    assert mode == 0o600
    again, started = _open_counting(root)
    assert again is not None and started == []
    with again:
        assert again.since(again.clock()).paths == []


def test_watchman_sock_is_used_as_given_and_never_remembered(tmp_path, watchman_env):
    monitor, started = _open_counting(_root(tmp_path), "watchman")
    assert monitor is not None and started == []
    monitor.close()
    assert not os.path.exists(watchsock.memory_path())


def test_a_socket_in_a_folder_others_may_write_is_never_connected_to(tmp_path, default_daemon):
    hostile = tmp_path / "shared"
    hostile.mkdir()
    server = _listening(hostile / "sock")
    hostile.chmod(0o777)  # anyone could have put it there, or swap it
    try:
        _plant(str(hostile / "sock"))
        monitor, started = _open_counting(_root(tmp_path))
        assert not _connected(server)
    finally:
        server.close()
    assert monitor is not None and len(started) == 1  # asked, and found the real daemon
    monitor.close()
    assert _remembered() == default_daemon.sock


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0,
                    reason="making a socket another user owns needs root")
def test_a_socket_another_user_owns_is_never_connected_to(tmp_path, default_daemon):
    folder = tmp_path / "theirs"
    folder.mkdir(mode=0o700)
    server = _listening(folder / "sock")
    os.chown(folder / "sock", 65534, 65534)  # nobody's: a hostile project owner's daemon
    try:
        _plant(str(folder / "sock"))
        monitor, started = _open_counting(_root(tmp_path))
        assert not _connected(server)
    finally:
        server.close()
    assert monitor is not None and len(started) == 1
    monitor.close()
    assert _remembered() == default_daemon.sock


def test_a_symlink_to_a_socket_is_not_followed(tmp_path, default_daemon):
    folder = tmp_path / "links"
    folder.mkdir(mode=0o700)
    server = _listening(tmp_path / "target.sock")
    (folder / "sock").symlink_to(tmp_path / "target.sock")
    try:
        _plant(str(folder / "sock"))
        assert not watchsock.trusted(str(folder / "sock"))
        monitor, _ = _open_counting(_root(tmp_path))
        assert not _connected(server)
    finally:
        server.close()
    assert monitor is not None
    monitor.close()
    assert _remembered() == default_daemon.sock


def test_a_path_that_is_not_a_socket_is_not_trusted(tmp_path):
    folder = tmp_path / "f"
    folder.mkdir(mode=0o700)
    (folder / "file").write_text("x")
    os.mkfifo(folder / "fifo")
    for name in ("file", "fifo", "missing"):
        assert not watchsock.trusted(str(folder / name))
    assert not watchsock.trusted("relative/sock")


def test_a_daemon_restarted_at_another_path_is_asked_for_again(tmp_path, default_daemon):
    # The remembered socket is left behind by a daemon that is gone: a trusted path that
    # refuses connections. The program is asked, and the memory follows the daemon.
    folder = tmp_path / "old-state"
    folder.mkdir(mode=0o700)
    stale = _listening(folder / "sock")
    stale.close()  # the file stays; nothing listens
    assert watchsock.trusted(str(folder / "sock"))
    _plant(str(folder / "sock"))
    monitor, started = _open_counting(_root(tmp_path))
    assert monitor is not None and len(started) == 1
    monitor.close()
    assert _remembered() == default_daemon.sock


def test_a_stale_memory_in_watchman_mode_gives_no_warning(tmp_path, default_daemon):
    folder = tmp_path / "old-state"
    folder.mkdir(mode=0o700)
    _listening(folder / "sock").close()
    _plant(str(folder / "sock"))
    warnings: list = []
    monitor = Monitor.open(str(_root(tmp_path)), "watchman",
                           on_warning=lambda p, m: warnings.append(m))
    assert monitor is not None and warnings == []
    monitor.close()


def test_a_memory_made_under_another_environment_is_not_used(tmp_path, default_daemon,
                                                             monkeypatch):
    root = _root(tmp_path)
    monitor, _ = _open_counting(root)
    assert monitor is not None
    monitor.close()
    assert _remembered() == default_daemon.sock
    # Another TMPDIR: watchman's default socket is elsewhere, and no daemon runs there. The
    # remembered socket still answers, but auto mode must behave as the program says: walk.
    elsewhere = tmp_path / "other-tmp"
    elsewhere.mkdir()
    monkeypatch.setenv("TMPDIR", str(elsewhere))
    monitor, started = _open_counting(root)
    assert monitor is None and len(started) == 1


def test_the_cli_remembers_the_socket_and_the_next_snapshot_asks_watchman(tmp_path,
                                                                         default_daemon, cli):
    root = _root(tmp_path)
    (root / "a.txt").write_text("a")

    def snapshot() -> dict:
        done = cli.run("--store", str(tmp_path / "store"), "snapshot", "--json", root=root)
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)

    assert snapshot()["walk"] == "full"
    assert _remembered() == default_daemon.sock
    (root / "b.txt").write_text("b")
    second = snapshot()
    expect_watchman(second)
    assert second["files"] == 2


def test_a_remembered_socket_that_is_not_watchman_is_forgotten_and_the_program_asked(
        tmp_path, default_daemon):
    import threading

    folder = tmp_path / "mine"
    folder.mkdir(mode=0o700)
    server = _listening(folder / "sock")
    server.setblocking(True)
    accepted: list[int] = []

    def hang_up() -> None:  # another program of this user: it closes on every client
        try:
            conn, _ = server.accept()
        except OSError:
            return
        accepted.append(1)
        conn.close()

    worker = threading.Thread(target=hang_up, daemon=True)
    worker.start()
    try:
        _plant(str(folder / "sock"))
        monitor, started = _open_counting(_root(tmp_path))
    finally:
        server.close()
        worker.join(10)
    assert accepted == [1] and len(started) == 1
    assert monitor is not None
    monitor.close()
    assert _remembered() == default_daemon.sock


def test_a_remembered_daemon_that_does_not_answer_is_not_asked_for_again(tmp_path,
                                                                        default_daemon):
    folder = tmp_path / "mine"
    folder.mkdir(mode=0o700)
    server = _listening(folder / "sock")  # accepts into its queue, never answers
    warnings: list = []
    global _spawned
    _spawned = []
    try:
        _plant(str(folder / "sock"))
        monitor = Monitor.open(str(_root(tmp_path)), "auto",
                               on_warning=lambda p, m: warnings.append(m), timeout=0.5)
        started, _spawned = _spawned, None
        assert _connected(server)
    finally:
        _spawned = None
        server.close()
    assert monitor is None and started == []
    assert len(warnings) == 1 and "SocketTimeout" in warnings[0]
    assert _remembered() is None  # forgotten: the next command asks
