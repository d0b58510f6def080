"""The MCP SDK's own stdio client against `undostore mcp` in a real child process, for the MCP
suites (each skips first where the `mcp` extra is absent)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import anyio
from mcp.client.client import Client
from mcp.client.stdio import StdioServerParameters


def server(root: Path) -> StdioServerParameters:
    # WATCHMAN_SOCK too: the test's own (or no) daemon, never the tester's.
    env = {k: v for k, v in os.environ.items()
           if k.startswith(("UNDOSTORE_", "XDG_")) or k == "WATCHMAN_SOCK"}
    env.update(HOME=os.environ["HOME"], USERPROFILE=os.environ.get("USERPROFILE", ""),
               GIT_CONFIG_NOSYSTEM="1")
    return StdioServerParameters(command=sys.executable, args=["-m", "undostore", "mcp"],
                                 cwd=str(root), env=env)


def session(root: Path, script: Any) -> Any:
    """Run `await script(client)` against a fresh server started in `root`."""

    async def main() -> Any:
        async with Client(server(root), mode="legacy", read_timeout_seconds=60) as client:
            return await script(client)

    return anyio.run(main)


def payload(result: Any) -> dict:
    """The JSON the tool returned, from its text content (and the same as structured)."""
    text = "".join(c.text for c in result.content if c.type == "text")
    data = json.loads(text)
    assert result.structured_content == data
    return data
