"""A client that stops reading never holds the store (issue 45): `undostore mcp` in a real child
process, its client a test that writes requests and reads nothing, so the server's stdout pipe
fills (64 KiB of `tools/list` answers). An `undo` with a progress token then runs; its progress
must never wait on the client while the store is locked, so a hook in another process records
its point within 5 s, and the undo itself finishes (its files and its reply, once the client
reads again)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from undostore import Workspace

# FIONREAD on the pipe and flock on the store lock: POSIX only.
fcntl = pytest.importorskip("fcntl")
termios = pytest.importorskip("termios")
pytest.importorskip("mcp")

PIPE_FULL = 50_000   # bytes waiting in the server's stdout pipe: 64 KiB holds no more answers
FILES = 1000


def _message(proc: subprocess.Popen, **fields: object) -> None:
    proc.stdin.write(json.dumps({"jsonrpc": "2.0", **fields}).encode() + b"\n")
    proc.stdin.flush()


def _waiting_bytes(proc: subprocess.Popen) -> int:
    import array

    buf = array.array("i", [0])
    fcntl.ioctl(proc.stdout.fileno(), termios.FIONREAD, buf, True)
    return buf[0]


def _locked(store: Path) -> bool:
    """Whether another process holds the store lock now (without keeping it)."""
    fd = os.open(store / "lock", os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return True
    else:
        fcntl.flock(fd, fcntl.LOCK_UN)
        return False
    finally:
        os.close(fd)


def _answers(raw: bytes) -> dict[object, dict]:
    found = {}
    for line in raw.splitlines():
        message = json.loads(line)
        if "id" in message:
            found[message["id"]] = message
    return found


def test_a_client_that_stops_reading_never_holds_the_store(tmp_path: Path):
    root = tmp_path / "project"
    root.mkdir()
    for i in range(FILES):
        (root / f"f{i:04d}.txt").write_text(f"before {i}\n" * 20)
    store = tmp_path / "store"
    env = {**os.environ, "UNDOSTORE_STORE": str(store), "UNDOSTORE_FSMONITOR": "off"}
    with Workspace(root, store=store) as ws:
        ws.snapshot(session="s", label="the turn")
    for i in range(FILES):
        (root / f"f{i:04d}.txt").write_text(f"after {i}\n" * 20)
    server = subprocess.Popen([sys.executable, "-m", "undostore", "mcp"], cwd=root, env=env,
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              stderr=subprocess.DEVNULL)
    try:
        _message(server, id=0, method="initialize",
                 params={"protocolVersion": "2025-06-18", "capabilities": {},
                         "clientInfo": {"name": "stalled", "version": "1"}})
        _message(server, method="notifications/initialized")
        # The client stops reading: answers pile up until the pipe is full.
        deadline = time.monotonic() + 60
        sent = 0
        while _waiting_bytes(server) < PIPE_FULL:
            assert time.monotonic() < deadline, "the server's stdout never filled"
            if sent < 200:
                sent += 1
                _message(server, id=f"list{sent}", method="tools/list")
            time.sleep(0.05)
        _message(server, id="undo", method="tools/call",
                 params={"name": "undo", "arguments": {"session": "s"},
                         "_meta": {"progressToken": "p1"}})
        deadline = time.monotonic() + 60
        while not _locked(store):
            assert time.monotonic() < deadline, "the undo never took the store"
            time.sleep(0.002)
        started = time.monotonic()
        event = {"session_id": "other", "cwd": str(root), "hook_event_name": "UserPromptSubmit",
                 "prompt": "another conversation's turn"}
        hooked = subprocess.run([sys.executable, "-m", "undostore", "hook"], cwd=root, env=env,
                                input=json.dumps(event).encode(), capture_output=True,
                                timeout=60)
        waited = time.monotonic() - started
        assert hooked.returncode == 0, hooked.stderr
        assert waited < 5, f"the hook waited {waited:.1f} s for the store"
        with Workspace(root, store=store) as ws:
            assert [p.label for p in ws.log("other").undo] == ["another conversation's turn"]
        assert all((root / f"f{i:04d}.txt").read_text() == f"before {i}\n" * 20
                   for i in range(FILES))
        # Reading again: the undo's reply was kept for the client.
        server.stdin.close()
        out = server.stdout.read()
        assert server.wait(timeout=60) == 0
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()
        server.stdout.close()
    reply = _answers(out)["undo"]
    assert "result" in reply and not reply["result"].get("isError"), reply
    assert len(json.loads(reply["result"]["content"][0]["text"])["modified"]) == FILES
