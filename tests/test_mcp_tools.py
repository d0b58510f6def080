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
from undostore.errors import NoStoreError  # noqa: E402

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
    from undostore_cli.mcpserver.server import build_server
    from undostore_cli.plain import Options

    root = tree_factory({})
    for i in range(8):
        (root / f"big{i}").write_bytes(os.urandom(4 << 20))
    heard: list[tuple[float, float | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        heard.append((progress, total))

    async def main() -> Any:
        server = build_server(Options(root=str(root)), heartbeat=0.02)
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


def test_each_read_tool_returns_exactly_its_commands_json(tree_factory):
    """Each read tool answers with its command's `--json` object, the command run right after
    it on the store as the tool left it (the tools call the library, the CLI prints: one JSON
    for both, results.py)."""
    import anyio

    root = tree_factory({"a.txt": "1\n", "b.txt": "b\n"})
    with Workspace(root) as ws:
        first = ws.snapshot(session="s", label="turn 1").id
        (root / "a.txt").write_text("2\n")
        ws.snapshot(session="s", label="turn 2")
    (root / "b.txt").write_text("B\n")
    calls = [("status", {"session": "s"}, ["status", "--session", "s"]),
             ("log", {"session": "s"}, ["log", "--session", "s"]),
             ("sessions", {}, ["sessions"]),
             ("show", {"n": 1, "session": "s"}, ["show", "1", "--session", "s"]),
             ("diff", {"from": first, "paths": ["a.txt"]}, ["diff", first, "--", "a.txt"]),
             ("ops", {"session": "s"}, ["ops", "--session", "s"])]

    def command_json(argv: list[str]) -> dict[str, Any]:
        done = subprocess.run([sys.executable, "-m", "undostore", argv[0], "--json", *argv[1:]],
                              cwd=root, capture_output=True, text=True, timeout=60,
                              stdin=subprocess.DEVNULL)
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)

    async def script(client: Client) -> Any:
        pairs = []
        for name, args, argv in calls:
            with anyio.fail_after(20):
                answer = payload(await client.call_tool(name, args))
            pairs.append((name, answer, command_json(argv)))   # the store as the tool left it
        return pairs

    for name, answer, expected in session(root, script):
        if name == "status":   # seconds since the newest point: it grew between the two
            assert abs(answer.pop("last_point_age_seconds")
                       - expected.pop("last_point_age_seconds")) < 60
        assert answer == expected, name


def test_in_a_folder_no_store_protects_the_read_tools_answer_as_their_commands_and_make_none(
        tree_factory):
    """log, sessions and ops give their command's empty JSON, show and diff its error; no
    store is made (read-only commands never make one), as on the command line."""
    root = tree_factory({"a.txt": "1\n"})

    async def script(client: Client) -> Any:
        return [await client.call_tool(name, args) for name, args in
                (("log", {}), ("sessions", {}), ("ops", {}), ("show", {}),
                 ("diff", {"from": "abcd"}))]

    log, sessions, ops, show, diff = session(root, script)
    assert payload(log) == {"session": "default", "undo": [], "redo": []}
    assert payload(sessions) == {"sessions": []}
    assert payload(ops) == {"ops": []}
    for failed in (show, diff):
        assert failed.is_error
        assert failed.structured_content["exit_code"] == 2, failed
        assert "no undostore store for" in failed.content[0].text, failed.content[0].text
    for argv, answer in ((["log"], log), (["sessions"], sessions), (["ops"], ops)):
        done = subprocess.run([sys.executable, "-m", "undostore", *argv, "--json"], cwd=root,
                              capture_output=True, text=True, timeout=60,
                              stdin=subprocess.DEVNULL)
        assert json.loads(done.stdout) == payload(answer), argv
    with pytest.raises(NoStoreError):
        Workspace(root, create=False)


def test_the_tools_call_the_library_never_the_command_line(tree_factory):
    """Every tool, called as the server calls it, leaves the command line (its click group and
    commands; click itself comes with the MCP SDK) unimported and stdout untouched: the server
    makes library calls, it does not run commands with a swapped stdout and read their output
    back."""
    root = tree_factory({"a.txt": "1\n"})
    program = f"""
import io, json, sys
from undostore_cli.mcpserver.server import TOOLS, call
from undostore_cli.plain import Options
out = sys.stdout
options = Options(root={str(root)!r})
first = json.loads(call(options, "snapshot", {{"session": "s"}}).content[0].text)["id"]
(__import__("pathlib").Path({str(root)!r}) / "a.txt").write_text("2\\n")
args = {{"snapshot": {{"session": "s"}}, "diff": {{"from": first, "format": "patch"}},
        "undo": {{"session": "s"}}, "redo": {{"session": "s"}}, "restore": {{"id": first}},
        "revert": {{"from": first, "dry_run": True}}, "show": {{"session": "s"}},
        "log": {{"session": "s"}}, "status": {{"session": "s"}}, "ops": {{}}, "sessions": {{}}}}
assert set(args) == set(TOOLS), sorted(TOOLS)
errors = [name for name in args if call(options, name, args[name]).is_error]
assert sys.stdout is out
loaded = sorted(m for m in sys.modules
                if m.startswith("undostore_cli.commands.") or m == "undostore_cli.main")
print(json.dumps({{"errors": errors, "loaded": loaded}}))
"""
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True,
                          timeout=120, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"errors": [], "loaded": []}
