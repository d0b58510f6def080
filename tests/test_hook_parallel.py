"""Hosts start matching hooks at once (Codex and Gemini launch them concurrently; two
conversations in one project prompt at the same moment): 8 real `undostore hook` processes on
one store all succeed, each well within a host's timeout (Copilot's default is 30 s, Gemini's and
Claude Code's 60 s), and every prompt gets its point."""

from __future__ import annotations

import json
import subprocess
import sys
import time

from undostore import Workspace

HOST_TIMEOUT = 30.0


def test_eight_hooks_started_at_once_on_one_store_all_succeed(tree_factory):
    root = tree_factory({f"f{i}.txt": str(i) * 100 for i in range(200)})
    with Workspace(root) as ws:
        ws.snapshot(session="s0", label="earlier")  # the store exists, with a turn to end
    events = []
    for i in range(8):
        if i % 4 == 3:
            events.append({"session_id": "s0", "cwd": str(root), "hook_event_name": "Stop"})
        else:
            events.append({"session_id": f"p{i}", "cwd": str(root),
                           "hook_event_name": "UserPromptSubmit", "prompt": f"prompt {i}"})
    started = time.monotonic()
    procs = [subprocess.Popen([sys.executable, "-m", "undostore", "hook"],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE) for _ in events]
    for proc, event in zip(procs, events, strict=True):
        proc.stdin.write(json.dumps(event).encode())
        proc.stdin.close()
    results = []
    for proc in procs:
        out, err = proc.stdout.read(), proc.stderr.read()
        results.append((proc.wait(timeout=HOST_TIMEOUT * 2), out, err, time.monotonic()))
    for code, out, err, _ in results:
        assert code == 0, err
        assert out == b""
    slowest = max(done for *_, done in results) - started
    assert slowest < HOST_TIMEOUT / 2, f"the last hook took {slowest:.1f} s"
    with Workspace(root) as ws:
        for i, event in enumerate(events):
            if event["hook_event_name"] == "UserPromptSubmit":
                assert [p.label for p in ws.log(f"p{i}").undo] == [f"prompt {i}"]
        assert ws.log("s0").undo[0].after == ws.snapshot().id
