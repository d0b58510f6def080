"""The watchman client against a real, private watchman daemon (tests/watchman_daemon.py)."""

from __future__ import annotations

import getpass
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from undostore.snapshot.watchman import Monitor, Token, fsmonitor_mode


def _open(root: Path, warnings: list, mode: str = "watchman",
          skip: frozenset[str] = frozenset()) -> Monitor:
    monitor = Monitor.open(str(root), mode, skip,
                           on_warning=lambda p, m: warnings.append((p, m)))
    assert monitor is not None, warnings
    return monitor


def test_a_write_made_just_before_the_query_is_reported(tmp_path, watchman_env):
    root = tmp_path / "r"
    (root / "d").mkdir(parents=True)
    (root / "d" / "old").write_text("x")
    warnings: list = []
    with _open(root, warnings) as monitor:
        token = monitor.clock()
        assert token is not None
        (root / "d" / "old").write_text("y")
        (root / "new").write_text("n")
        changes = monitor.since(token)
    assert changes.paths is not None, changes.reason
    assert {"d/old", "new"} <= set(changes.paths)
    assert changes.token is not None and changes.token.clock != token.clock
    assert warnings == []


def test_nothing_changed_gives_an_empty_list(tmp_path, watchman_env):
    root = tmp_path / "r"
    root.mkdir()
    (root / "a").write_text("a")
    with _open(root, []) as monitor:
        token = monitor.clock()
        changes = monitor.since(token)
    assert changes.paths == []


def test_git_folders_at_any_depth_and_the_store_are_never_reported(tmp_path, watchman_env):
    root = tmp_path / "r"
    for folder in (".git/objects", "sub/.git", "store/objects"):
        (root / folder).mkdir(parents=True)
    with _open(root, [], skip=frozenset({"store"})) as monitor:
        token = monitor.clock()
        (root / ".git" / "objects" / "x").write_text("x")
        (root / "sub" / ".git" / "y").write_text("y")
        (root / "store" / "objects" / "z").write_text("z")
        (root / "kept").write_text("k")
        changes = monitor.since(token)
    assert changes.paths == ["kept"]


def test_no_clock_or_a_clock_of_another_root_means_walk(tmp_path, watchman_env):
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    with _open(a, []) as monitor_a, _open(b, []) as monitor_b:
        assert monitor_a.since(None).paths is None
        token_b = monitor_b.clock()
        changes = monitor_a.since(token_b)
    assert changes.paths is None and "another watch root" in changes.reason
    assert changes.token is not None and changes.token.watch == str(a)


def test_a_clock_from_another_daemon_instance_means_walk(tmp_path, watchman_env):
    root = tmp_path / "r"
    root.mkdir()
    with _open(root, []) as monitor:
        token = monitor.clock()
    stale = Token(token.watch, token.relative, "c:1:2:1:3", token.recrawls)
    with _open(root, []) as monitor:
        changes = monitor.since(stale)
    assert changes.paths is None and changes.token is not None


def test_a_recrawl_means_walk_once(tmp_path, watchman_env):
    root = tmp_path / "r"
    root.mkdir()
    with _open(root, []) as monitor:
        token = monitor.clock()
        monitor._client.query("debug-recrawl", monitor.watch)  # type: ignore[attr-defined]
        changes = monitor.since(token)
        assert changes.paths is None and "recrawl" in changes.reason
        again = monitor.since(changes.token)
    assert again.paths == []


def test_a_daemon_killed_mid_session_gives_one_warning_and_walk(tmp_path, watchman_env):
    root = tmp_path / "r"
    root.mkdir()
    warnings: list = []
    with _open(root, warnings) as monitor:
        token = monitor.clock()
        watchman_env.kill()
        first = monitor.since(token)
        second = monitor.since(token)
    assert first.paths is None and second.paths is None
    assert len(warnings) == 1 and "watchman failed" in warnings[0][1]


def test_auto_without_a_daemon_walks_silently(tmp_path, monkeypatch):
    monkeypatch.setenv("WATCHMAN_SOCK", str(tmp_path / "nothing-here.sock"))
    warnings: list = []
    assert Monitor.open(str(tmp_path), "auto", on_warning=lambda p, m: warnings.append(m)) is None
    assert warnings == []


def test_watchman_mode_with_a_dead_socket_warns_once(tmp_path, monkeypatch):
    pytest.importorskip("pywatchman")
    monkeypatch.setenv("WATCHMAN_SOCK", str(tmp_path / "nothing-here.sock"))
    warnings: list = []
    assert Monitor.open(str(tmp_path), "watchman",
                        on_warning=lambda p, m: warnings.append(m)) is None
    assert len(warnings) == 1


def test_off_never_connects(tmp_path, watchman_env):
    assert Monitor.open(str(tmp_path), "off") is None


@pytest.mark.parametrize(("value", "mode"), [
    ("", "auto"), ("auto", "auto"), ("WATCHMAN", "watchman"), ("off", "off")])
def test_mode_from_the_environment(monkeypatch, value, mode):
    monkeypatch.setenv("UNDOSTORE_FSMONITOR", value)
    assert fsmonitor_mode() == mode


def test_an_unknown_mode_is_refused(monkeypatch):
    """Refused where a person types it; the hook's lenient reading is tests/test_settings.py's."""
    from undostore.errors import UsageError

    monkeypatch.setenv("UNDOSTORE_FSMONITOR", "fsevents")
    with pytest.raises(UsageError, match="auto, watchman or off"):
        fsmonitor_mode()


def test_token_round_trips_through_a_tuple():
    token = Token("/w", "sub", "c:1:2:3:4", 2)
    assert Token.from_tuple(token.to_tuple()) == token
    assert Token.from_tuple(("x",)) is None


def test_a_snapshot_in_auto_mode_without_any_watchman_walks_silently(tmp_path, monkeypatch):
    from undostore import Workspace

    monkeypatch.delenv("WATCHMAN_SOCK", raising=False)
    if sys.platform != "win32":
        monkeypatch.setenv("PATH", str(tmp_path / "no-programs-here"))  # no watchman to find
    (tmp_path / "root").mkdir()
    (tmp_path / "root" / "a.txt").write_text("a")
    with Workspace(tmp_path / "root", store=tmp_path / "store") as ws:
        first, second = ws.snapshot(), ws.snapshot()
    assert first.walk == second.walk == "full"
    assert first.warnings == second.warnings == []


def test_auto_finds_a_running_daemon_at_watchmans_default_socket(tmp_path, watchman_env,
                                                                monkeypatch):
    # The private daemon's socket is where watchman looks by default under this TMPDIR.
    monkeypatch.delenv("WATCHMAN_SOCK")
    monkeypatch.setenv("TMPDIR", str(watchman_env.folder))
    root = tmp_path / "r"
    root.mkdir()
    monitor = Monitor.open(str(root), "auto")
    assert monitor is not None
    with monitor:
        assert monitor.since(monitor.clock()).paths == []


def test_watchman_mode_starts_a_daemon_when_none_runs(tmp_path, watchman_daemon, monkeypatch):
    # A fresh TMPDIR: no daemon answers at the default socket; `watchman` mode starts one.
    tmpdir = Path(tempfile.mkdtemp(prefix="usw-spawn-"))
    monkeypatch.delenv("WATCHMAN_SOCK", raising=False)
    monkeypatch.setenv("TMPDIR", str(tmpdir))
    root = tmp_path / "r"
    root.mkdir()
    assert Monitor.open(str(root), "auto") is None
    sock = tmpdir / f"{getpass.getuser()}-state" / "sock"
    try:
        monitor = Monitor.open(str(root), "watchman")
        assert monitor is not None and sock.exists()
        monitor.close()
    finally:
        subprocess.run(["watchman", f"--sockname={sock}", "--no-spawn", "shutdown-server"],
                       capture_output=True, timeout=30, check=False)
        shutil.rmtree(tmpdir, ignore_errors=True)


def test_without_the_extra_auto_walks_silently_and_watchman_mode_warns(tmp_path, watchman_env,
                                                                       monkeypatch):
    # Blocks the import as a base install (no `undostore[watchman]`) would lack it.
    monkeypatch.setitem(sys.modules, "pywatchman", None)
    warnings: list = []
    assert Monitor.open(str(tmp_path), "auto", on_warning=lambda p, m: warnings.append(m)) is None
    assert warnings == []
    assert Monitor.open(str(tmp_path), "watchman",
                        on_warning=lambda p, m: warnings.append(m)) is None
    assert len(warnings) == 1 and "undostore[watchman]" in warnings[0]
