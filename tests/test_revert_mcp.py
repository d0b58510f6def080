"""The MCP `revert` tool, driven by the official SDK's stdio client in a real server process:
one turn taken back with later edits kept, conflicts a tool error (refused, or with `merge`
markers left to resolve), and the revert listed by the `ops` tool. Skipped without the
`undostore[mcp]` extra."""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("mcp")

from .mcp_support import Client, payload, session  # noqa: E402

LINES = "".join(f"line {i}\n" for i in range(1, 31))


def _edit(text: str, number: int, new: str) -> str:
    lines = text.splitlines(keepends=True)
    lines[number - 1] = new + "\n"
    return "".join(lines)


def test_revert_tool_takes_back_one_turn_and_names_conflicts(tree_factory):
    root = tree_factory({"a.txt": LINES})

    def write(text: str) -> None:
        (root / "a.txt").write_text(text, newline="")

    async def script(client: Client) -> Any:
        first = payload(await client.call_tool("snapshot", {"session": "s"}))
        write(_edit(LINES, 3, "turn 1"))
        second = payload(await client.call_tool("snapshot", {"session": "s"}))
        write(_edit(_edit(LINES, 3, "turn 1"), 25, "turn 2"))
        reverted = payload(await client.call_tool("revert", {"from": first["id"][:10]}))
        clean = (root / "a.txt").read_bytes().decode()
        write(_edit(LINES, 3, "user"))   # the same line the turn changed
        refused = await client.call_tool("revert", {"from": first["id"], "to": second["id"]})
        merged = await client.call_tool("revert", {"from": first["id"], "to": second["id"],
                                                   "merge": True})
        ops = payload(await client.call_tool("ops", {}))
        return reverted, clean, refused, merged, ops

    reverted, clean, refused, merged, ops = session(root, script)
    assert reverted["conflicts"] == [] and reverted["modified"] == ["a.txt"]
    assert clean == _edit(LINES, 25, "turn 2")
    assert refused.is_error and "a.txt" in refused.content[0].text
    # Done, with markers left: a tool error (never "done") whose result lists them.
    assert merged.is_error and "conflict markers" in merged.content[0].text
    merged = merged.structured_content
    assert merged["conflicts"] == ["a.txt"]
    assert "<<<<<<< files now\nuser\n=======\nline 3\n>>>>>>>" in (root / "a.txt").read_text()
    reverts = [o for o in ops["ops"] if o["op"] == "revert"]
    assert [o["id"] for o in reverts] == [merged["target"], reverted["target"]]
    assert reverts[1]["safety"] == reverted["safety"]
