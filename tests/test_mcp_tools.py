"""The MCP server as outside clients use it, driven by the official Python SDK's stdio client:
tool annotations, the `restore` and `sessions` tools, `dry_run`, a result over 1 MB cut to a
summary, progress notifications for a restore when the client sent a token, and a recovery a
tool call finished reported in `warnings`. Skipped without the `undostore[mcp]` extra."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from typing import Any

import pytest

pytest.importorskip("mcp")

from undostore import Workspace  # noqa: E402

from .mcp_support import Client, payload, session  # noqa: E402

READ_ONLY = {"diff", "log", "status", "ops", "sessions"}
DESTRUCTIVE = {"undo", "redo", "restore", "revert"}
STALL = os.path.join(os.path.dirname(os.path.abspath(__file__)), "stall.py")


def test_tools_carry_annotations_and_the_restore_tools_take_dry_run(tree_factory):
    root = tree_factory({"a.txt": "1"})

    async def script(client: Client) -> Any:
        return (await client.list_tools()).tools

    tools = {t.name: t for t in session(root, script)}
    assert set(tools) >= READ_ONLY | DESTRUCTIVE | {"snapshot"}
    for name in READ_ONLY:
        assert tools[name].annotations.read_only_hint is True, name
    for name in DESTRUCTIVE:
        hints = tools[name].annotations
        assert hints.read_only_hint is False and hints.destructive_hint is True, name
        assert tools[name].input_schema["properties"]["dry_run"]["type"] == "boolean"
    assert tools["snapshot"].annotations.destructive_hint is False
    assert tools["restore"].input_schema["required"] == ["id"]


def test_restore_sessions_and_dry_runs_change_nothing_until_asked(tree_factory):
    root = tree_factory({"a.txt": "one", "b.txt": "b"})

    async def script(client: Client) -> Any:
        first = payload(await client.call_tool("snapshot", {"session": "s"}))
        (root / "a.txt").write_text("two")
        (root / "c.txt").write_text("new")
        dry = {name: payload(await client.call_tool(name, args)) for name, args in [
            ("undo", {"session": "s", "dry_run": True}),
            ("restore", {"id": first["id"][:10], "dry_run": True}),
            ("revert", {"from": first["id"], "dry_run": True})]}
        unchanged = (root / "a.txt").read_text(), (root / "c.txt").exists()
        sessions = payload(await client.call_tool("sessions", {}))
        restored = payload(await client.call_tool("restore", {"id": first["id"]}))
        bad = await client.call_tool("restore", {"id": "-rf"})
        return dry, unchanged, sessions, restored, bad

    dry, unchanged, sessions, restored, bad = session(root, script)
    assert unchanged == ("two", True)
    for name, result in dry.items():
        assert result["dry_run"] is True, name
        assert result["modified"] == ["a.txt"] and result["deleted"] == ["c.txt"], name
    assert [(s["name"], s["undo"]) for s in sessions["sessions"]] == [("s", 1)]
    assert restored["dry_run"] is False and restored["deleted"] == ["c.txt"]
    assert (root / "a.txt").read_text() == "one" and not (root / "c.txt").exists()
    assert bad.is_error and "not a snapshot id" in bad.content[0].text


def test_a_result_over_1_mb_is_cut_to_a_summary_that_says_how_to_narrow_it(tree_factory):
    root = tree_factory({"small.txt": "s\n"})

    async def script(client: Client) -> Any:
        first = payload(await client.call_tool("snapshot", {}))
        (root / "big.txt").write_text("".join(f"line {i} of a big file\n"
                                              for i in range(120_000)))
        (root / "small.txt").write_text("t\n")
        big = await client.call_tool("diff", {"from": first["id"], "format": "patch"})
        narrow = payload(await client.call_tool("diff", {"from": first["id"],
                                                         "format": "patch",
                                                         "paths": ["small.txt"]}))
        return big, narrow

    big, narrow = session(root, script)
    [text] = [c.text for c in big.content if c.type == "text"]
    assert len(text.encode()) <= 1_000_000
    data = json.loads(text)
    assert big.structured_content == data  # the summary, not the 3 MB patch, is what is sent
    assert data["truncated"] is True and data["bytes"] > 1_000_000
    assert "paths" in data["narrow"]
    assert {c["path"] for c in data["changes"]} == {"big.txt", "small.txt"}
    assert data["text"].startswith("diff --git") and data["text_total_chars"] > 1_000_000
    assert "truncated" not in narrow and "-s\n+t\n" in narrow["text"]


def test_an_undo_reports_progress_when_the_client_sent_a_token(tree_factory):
    root = tree_factory({f"d{d}": {f"f{i}.txt": "x" * 2000 for i in range(d, 400, 10)}
                         for d in range(10)})
    heard: list[tuple[float, float | None, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        heard.append((progress, total, message))

    async def script(client: Client) -> Any:
        await client.call_tool("snapshot", {"session": "s"})
        for i in range(0, 400, 2):
            (root / f"d{i % 10}" / f"f{i}.txt").write_text("y")
        quiet = await client.call_tool("undo", {"session": "s", "dry_run": True})
        return payload(await client.call_tool("undo", {"session": "s"},
                                              progress_callback=on_progress)), quiet

    undone, _ = session(root, script)
    assert len(undone["modified"]) == 200
    assert len(heard) >= 3, heard
    values = [p for p, _, _ in heard]
    assert values == sorted(set(values)), heard  # MCP: progress only ever increases
    assert {total for _, total, _ in heard} == {4.0}
    assert any("writing files" in (m or "") for *_, m in heard), heard


@pytest.mark.skipif(sys.platform == "win32", reason="SIGKILL (POSIX)")
def test_a_restore_a_killed_process_left_is_finished_and_named_in_warnings(tree_factory,
                                                                           tmp_path):
    root = tree_factory({f"f{i}.txt": f"A {i}\n" for i in range(30)})
    with Workspace(root) as ws:
        ws.snapshot(session="s", label="turn")
    for i in range(30):
        (root / f"f{i}.txt").write_text(f"B {i}\n")
    marker = str(tmp_path / "stalled")
    env = {**os.environ, "UNDOSTORE_FSMONITOR": "off"}
    proc = subprocess.Popen([sys.executable, STALL, "5", marker, "--root", str(root), "undo",
                             "--yes", "--session", "s"], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 60
        while not os.path.exists(marker):
            assert proc.poll() is None and time.monotonic() < deadline, proc.stderr.read()
            time.sleep(0.01)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.stdout.close()
        proc.stderr.close()

    async def script(client: Client) -> Any:
        return payload(await client.call_tool("snapshot", {}))

    snap = session(root, script)
    [warning] = [w for w in snap["warnings"] if w["kind"] == "recovery"]
    assert warning["message"].startswith("finishing a restore to ")
    assert (root / "f0.txt").read_text() == "A 0\n"


def test_a_long_call_sends_heartbeat_progress_when_the_client_sent_a_token(tree_factory):
    """In process, with a short heartbeat: a snapshot that takes a while (32 MiB of random
    bytes to hash and compress) is heard of while it runs; without a token, nothing is sent."""
    import anyio
    from undostore_cli.mcp_server import build_server

    root = tree_factory({})
    for i in range(8):
        (root / f"big{i}").write_bytes(os.urandom(4 << 20))
    heard: list[tuple[float, float | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        heard.append((progress, total))

    async def main() -> Any:
        server = build_server(["--root", str(root)], heartbeat=0.02)
        async with Client(server, mode="legacy", read_timeout_seconds=60) as client:
            await client.call_tool("status", {}, progress_callback=on_progress)
            quiet = len(heard)
            result = await client.call_tool("snapshot", {"session": "s"},
                                            progress_callback=on_progress)
            return quiet, payload(result)

    quiet, snap = anyio.run(main)
    assert snap["id"]
    assert len(heard) - quiet >= 2, heard
    values = [p for p, _ in heard]
    assert values == sorted(set(values)) and all(total is None for _, total in heard)
