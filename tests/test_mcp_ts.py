"""`undostore mcp` driven by the official MCP TypeScript SDK client (tests/mcp_ts, installed by
`npm ci` there; .ci/run does it): annotations, progress for an undo, a result that would be
~25 MB answered with a summary while the connection stays up (the TS client drops a message
over 10 MiB), and a tool error. Skipped where node or the SDK is missing."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("mcp")

FOLDER = Path(__file__).parent / "mcp_ts"
NODE = shutil.which("node")
pytestmark = [
    pytest.mark.skipif(NODE is None or sys.platform == "win32",
                       reason="node is not installed (the TypeScript SDK client runs in node)"),
    pytest.mark.skipif(not (FOLDER / "node_modules" / "@modelcontextprotocol" / "sdk").is_dir(),
                       reason="the TypeScript SDK is not installed: run `npm ci` in tests/mcp_ts"),
]


def test_the_typescript_sdk_client_sees_annotations_progress_and_summaries(tree_factory):
    root = tree_factory({f"f{i}.txt": f"original {i}\n" * 50 for i in range(300)})
    result = subprocess.run([NODE, str(FOLDER / "client.mjs"), str(root), sys.executable],
                            capture_output=True, text=True, timeout=240, cwd=FOLDER)
    assert result.returncode == 0, result.stderr[-3000:]
    out = json.loads(result.stdout.splitlines()[-1])
    assert out["tools"]["undo"]["destructiveHint"] is True
    assert out["tools"]["diff"]["readOnlyHint"] is True
    assert len(out["undo"]["modified"]) == 150
    assert (root / "f0.txt").read_text() == "original 0\n" * 50
    values = [p["progress"] for p in out["progress"]]
    assert len(values) >= 2 and values == sorted(set(values)), out["progress"]
    assert all(p["total"] == 4 for p in out["progress"])
    assert out["big"]["truncated"] is True and out["big"]["sent"] < 2_100_000
    assert out["big"]["text_total_chars"] > 10_000_000
    assert out["after"]["redo"] == 1  # the connection is still up after the big result
    assert out["error"]["isError"] is True
    assert "nobody" in out["error"]["content"][0]["text"]
