"""The OpenCode plugin `undostore init` writes, run by node: `node --check`, then its handlers
called with the arguments OpenCode documents (`chat.message` and `session.idle`), running the
real `undostore hook` from the PATH. Skipped where node is missing (the Windows lane). The Pi
extension is run inside the real Pi (tests/test_host_pi.py)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from undostore import Workspace

from .init_support import init, shim

NODE = shutil.which("node")
pytestmark = pytest.mark.skipif(NODE is None or sys.platform == "win32",
                                reason="node is not installed (the plugins run in node hosts)")

OPENCODE_DRIVER = """
import { writeFileSync } from "node:fs";
import { join } from "node:path";
const [plugin, root] = process.argv.slice(2);
const mod = await import(plugin);
const names = Object.keys(mod);
const hooks = await mod.UndostorePlugin({ directory: root, worktree: root, project: {},
                                          client: {}, $: null });
await hooks["chat.message"](
  { sessionID: "oc-sess", agent: "build", model: { providerID: "x", modelID: "y" },
    messageID: "m1" },
  { message: { role: "user" }, parts: [{ type: "text", text: "Fix the parser" },
                                      { type: "file", url: "file:///x" }] });
writeFileSync(join(root, "a.txt"), "after the turn");
await hooks.event({ event: { type: "session.idle", properties: { sessionID: "oc-sess" } } });
await hooks.event({ event: { type: "message.updated", properties: {} } });
console.log(JSON.stringify({ names }));
"""

def written(tmp_path: Path, host: str) -> tuple[Path, Path]:
    root = tmp_path / "proj"
    root.mkdir()
    (root / "a.txt").write_text("before")
    result = init(root, host, "--json")
    assert result.returncode == 0, result.stderr
    [path] = json.loads(result.stdout)["written"]
    return root, Path(path)


def node(tmp_path: Path, driver: str, module: Path, root: Path) -> dict:
    script = tmp_path / "driver.mjs"
    script.write_text(driver)
    env = {"PATH": f"{shim(tmp_path)}:/usr/bin:/bin", "HOME": str(tmp_path / "_home")}
    env.update({k: v for k, v in os.environ.items() if k.startswith("UNDOSTORE")})
    result = subprocess.run([NODE, str(script), module.as_uri(), str(root)], capture_output=True,
                            text=True, env=env, timeout=120)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.splitlines()[-1])


def as_module(path: Path, tmp_path: Path) -> Path:
    """The file as node runs it (node cannot strip TypeScript types: the body is plain JS)."""
    copy = tmp_path / (path.stem + ".mjs")
    copy.write_text(path.read_text())
    check = subprocess.run([NODE, "--check", str(copy)], capture_output=True, text=True,
                           timeout=60)
    assert check.returncode == 0, check.stderr
    return copy


def test_opencode_plugin_records_a_point_and_the_files_after_the_turn(tmp_path):
    root, path = written(tmp_path, "opencode")
    assert path == root / ".opencode" / "plugin" / "undostore.js"
    out = node(tmp_path, OPENCODE_DRIVER, as_module(path, tmp_path), root)
    assert out["names"] == ["UndostorePlugin"]  # OpenCode calls every export as a plugin
    with Workspace(root) as ws:
        [point] = ws.log("oc-sess").undo
        assert point.label == "Fix the parser"
        assert point.after == ws.snapshot().id
