"""The MCP `show` tool: the same JSON as `show --json`, announced read-only."""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("mcp")

from undostore import Workspace  # noqa: E402

from .mcp_support import payload, session  # noqa: E402


def test_show_tool_gives_what_show_json_gives(tree_factory):
    root = tree_factory({"a.txt": "1\n"})
    with Workspace(root) as ws:
        first = ws.snapshot(session="s", label="turn one").id
        (root / "a.txt").write_text("2\n")
        second = ws.snapshot(session="s", label="turn two").id
        (root / "b.txt").write_text("b\n")

    async def script(client: Any) -> Any:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        last = await client.call_tool("show", {"session": "s"})
        by_n = await client.call_tool("show", {"session": "s", "n": 2})
        by_id = await client.call_tool("show", {"id": first[:8]})
        bad = await client.call_tool("show", {"n": 0})
        both = await client.call_tool("show", {"n": 1, "id": first})
        return tools["show"], last, by_n, by_id, bad, both

    tool, last, by_n, by_id, bad, both = session(root, script)
    assert tool.annotations is not None and tool.annotations.read_only_hint is True
    assert set(tool.input_schema["properties"]) == {"n", "id", "session"}
    assert payload(last)["point"]["label"] == "turn two"
    assert [c["path"] for c in payload(last)["changes"]] == ["b.txt"]
    assert (payload(by_n)["from"], payload(by_n)["to"]) == (first, second)
    assert payload(by_id) == payload(by_n)
    assert bad.is_error and both.is_error and "not both" in both.content[0].text
