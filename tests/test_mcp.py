"""`undostore mcp` driven by the official MCP SDK's own stdio client, in a real child process.

Skipped where the optional extra `undostore[mcp]` is not installed (the base install must not
need it); `.ci/run` installs it, so CI runs these.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

import pytest

pytest.importorskip("mcp")

import anyio  # noqa: E402 (after the skip: comes with mcp)
from mcp.client.client import Client  # noqa: E402

from undostore import Workspace  # noqa: E402

from .mcp_support import payload, session  # noqa: E402

TOOLS = {"snapshot", "diff", "undo", "redo", "log", "status", "ops"}


def test_initialize_and_list_tools_with_schemas_and_descriptions(tree_factory):
    root = tree_factory({"a.txt": "1"})

    async def script(client: Client) -> Any:
        return client.server_info, (await client.list_tools()).tools

    info, tools = session(root, script)
    assert info.name == "undostore"
    assert {t.name for t in tools} >= TOOLS
    for t in tools:
        assert t.description and "\n" not in t.description
        assert t.input_schema["type"] == "object"
    diff = next(t for t in tools if t.name == "diff")
    assert diff.input_schema["required"] == ["from"]
    assert set(diff.input_schema["properties"]) == {"from", "to", "paths", "format"}


def test_snapshot_returns_the_id_the_library_computes(tree_factory):
    root = tree_factory({"a.txt": "1", "src": {"m.py": "x"}})

    async def script(client: Client) -> Any:
        return await client.call_tool("snapshot", {"session": "agent", "label": "turn 1"})

    result = session(root, script)
    assert not result.is_error
    data = payload(result)
    with Workspace(root) as ws:
        assert data["id"] == ws.snapshot().id
        assert [p.label for p in ws.log("agent").undo] == ["turn 1"]


def test_errors_are_tool_errors_and_the_server_keeps_running(tree_factory):
    root = tree_factory({"a.txt": "1"})

    async def script(client: Client) -> Any:
        bad_id = await client.call_tool("diff", {"from": "beef"})
        nothing = await client.call_tool("undo", {"session": "empty"})
        unknown = await client.call_tool("nope", {})
        status = await client.call_tool("status", {"session": "empty"})
        return bad_id, nothing, unknown, status

    bad_id, nothing, unknown, status = session(root, script)
    assert bad_id.is_error and "nothing was recorded here" in bad_id.content[0].text
    assert nothing.is_error and "nothing to undo" in nothing.content[0].text
    assert unknown.is_error
    assert not status.is_error
    assert payload(status) == {"session": "empty", "undo": 0, "redo": 0, "restoring": False,
                               "pending": None, "last_point_age_seconds": None,
                               "no_hook": False, "over_max_files": None}


def test_undo_after_two_snapshots_restores_the_first_state(tree_factory):
    root = tree_factory({"a.txt": "one"})

    async def script(client: Client) -> Any:
        first = payload(await client.call_tool("snapshot", {"session": "s"}))
        (root / "a.txt").write_text("two")
        second = payload(await client.call_tool("snapshot", {"session": "s"}))
        (root / "a.txt").write_text("three")
        undone = [payload(await client.call_tool("undo", {"session": "s"})) for _ in range(2)]
        log = payload(await client.call_tool("log", {"session": "s"}))
        ops = payload(await client.call_tool("ops", {"session": "s", "since": "1h"}))
        return first, second, undone, log, ops

    first, second, undone, log, ops = session(root, script)
    assert (root / "a.txt").read_text() == "one"
    assert [u["target"] for u in undone] == [second["id"], first["id"]]
    assert log["undo"] == [] and len(log["redo"]) == 2
    assert [(o["op"], o["id"]) for o in ops["ops"]] == [
        ("undo", first["id"]), ("undo", second["id"]), ("snapshot", second["id"]),
        ("snapshot", first["id"])]
    assert ops["ops"][1]["safety"] == undone[0]["safety"]


def test_diff_returns_the_json_changes_and_the_requested_git_format(tree_factory):
    root = tree_factory({"a.txt": "1\n", "b.txt": "b\n"})

    async def script(client: Client) -> Any:
        first = payload(await client.call_tool("snapshot", {}))
        (root / "a.txt").write_text("2\n")
        return payload(await client.call_tool("diff", {"from": first["id"][:8],
                                                       "format": "patch"}))

    data = session(root, script)
    assert [(c["status"], c["path"]) for c in data["changes"]] == [("M", "a.txt")]
    assert "-1\n+2\n" in data["text"]


@pytest.mark.filterwarnings("ignore:ping is removed")   # the SDK's legacy mode keeps it
def test_pings_are_answered_while_a_long_snapshot_runs_and_a_second_call_waits_its_turn(
        tree_factory):
    """64 MiB of random bytes take the snapshot seconds to hash and compress: meanwhile the
    server answers pings (the call runs off its event loop), and a `status` sent meanwhile
    is answered after the snapshot, seeing its undo point (tool calls never overlap)."""
    root = tree_factory({})
    for i in range(8):
        (root / f"big{i}").write_bytes(os.urandom(8 << 20))
    events: list[str] = []
    results: dict[str, Any] = {}

    async def script(client: Client) -> None:
        async def call(name: str, args: dict) -> None:
            results[name] = await client.call_tool(name, args)
            events.append(name)

        async with anyio.create_task_group() as group:
            group.start_soon(call, "snapshot", {"session": "s"})
            while "snapshot" not in events:
                await client.send_ping()
                events.append("ping")
                if events.count("ping") == 3 and "snapshot" not in events:
                    group.start_soon(call, "status", {"session": "s"})
                await anyio.sleep(0.02)

    session(root, script)
    before_snapshot = events[:events.index("snapshot")]
    assert before_snapshot.count("ping") >= 3, events
    assert "status" in events[events.index("snapshot"):], events
    snapshot, status = payload(results["snapshot"]), payload(results["status"])
    assert status["undo"] == 1 and status["pending"] is None
    with Workspace(root) as ws:
        assert [p.id for p in ws.log("s").undo] == [snapshot["id"]]
        assert ws.snapshot().id == snapshot["id"]


def _snapshot_call(arguments: dict) -> list[dict]:
    """What a host sends, byte for byte, to take a snapshot: initialize, initialized, the call."""
    return [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize",
         "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                    "clientInfo": {"name": "raw", "version": "1"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
         "params": {"name": "snapshot", "arguments": arguments}},
    ]


def test_the_raw_protocol_answers_initialize_on_stdin(tree_factory):
    """What a host sends, byte for byte: newline-delimited JSON-RPC."""
    root = tree_factory({"a.txt": "1"})
    messages = _snapshot_call({})
    proc = subprocess.Popen([sys.executable, "-m", "undostore", "mcp"], cwd=root,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    try:
        answers = {}
        for message in messages:
            proc.stdin.write(json.dumps(message).encode() + b"\n")
            proc.stdin.flush()
            if "id" in message:
                answer = json.loads(proc.stdout.readline())
                answers[answer["id"]] = answer
        proc.stdin.close()
        assert proc.wait(timeout=30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.stdout.close()
        proc.stderr.close()
    assert answers[1]["result"]["serverInfo"]["name"] == "undostore"
    snapshot = json.loads(answers[2]["result"]["content"][0]["text"])
    with Workspace(root) as ws:
        assert snapshot["id"] == ws.snapshot().id


def test_a_call_whose_client_closed_stdin_at_once_is_still_answered(tree_factory):
    """A script pipes its requests in and closes stdin before any reply: the snapshot is
    taken and its reply written; the server then ends."""
    root = tree_factory({"a.txt": "1"})
    messages = _snapshot_call({"session": "s"})
    done = subprocess.run([sys.executable, "-m", "undostore", "mcp"], cwd=root,
                          input=b"".join(json.dumps(m).encode() + b"\n" for m in messages),
                          capture_output=True, timeout=60)
    assert done.returncode == 0, done.stderr
    answers = {a["id"]: a for a in map(json.loads, done.stdout.splitlines()) if "id" in a}
    snapshot = json.loads(answers[2]["result"]["content"][0]["text"])
    with Workspace(root) as ws:
        assert [p.id for p in ws.log("s").undo] == [snapshot["id"]]


def test_without_the_extra_the_command_says_what_to_install(tree_factory):
    script = ("import sys\nsys.modules['mcp'] = None  # as if `undostore[mcp]` were not installed\n"
              "from undostore_cli.main import main\nmain(['mcp'])\n")
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                            cwd=tree_factory({"a.txt": "1"}), timeout=60)
    assert result.returncode == 1
    assert result.stderr.startswith("undostore: error: the MCP server needs the `mcp` package")
    # the install command for this copy: its checkout's, as the tests run from one
    assert "-m pip install" in result.stderr and "[mcp]'" in result.stderr
