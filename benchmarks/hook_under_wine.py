"""The hook in its own process on Windows (no resident process there), timed against the
interpreter's start on a 2,000-file tree. Run with a Windows CPython that imports undostore and
undostore_cli (the Windows lane's, under Wine: .ci/win32-lane.sh sets PYTHONPATH so):

    wine python.exe benchmarks/hook_under_wine.py
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

FOLDERS, FILES = 40, 50
ROUNDS = 8


def main() -> int:
    base = tempfile.mkdtemp()
    root = os.path.join(base, "t")
    for d in range(FOLDERS):
        os.makedirs(os.path.join(root, f"d{d:02}"))
        for f in range(FILES):
            with open(os.path.join(root, f"d{d:02}", f"f{f:02}.txt"), "w") as out:
                out.write(f"{d} {f}\n")
    env = {**os.environ, "UNDOSTORE_HOME": os.path.join(base, "home"),
           "UNDOSTORE_FSMONITOR": "off"}

    def run(argv: list[str], data: str | None = None) -> float:
        started = time.perf_counter()
        done = subprocess.run(argv, input=data, capture_output=True, text=True, env=env,
                              cwd=root, check=False)
        took = time.perf_counter() - started
        if done.returncode != 0:
            raise SystemExit(done.stderr)
        return took

    def event(name: str, **fields: object) -> str:
        return json.dumps({"session_id": "w", "cwd": root, "hook_event_name": name, **fields})

    hook = [sys.executable, "-m", "undostore", "hook", "--host", "claude-code"]
    run([sys.executable, "-m", "undostore", "snapshot"])
    run(hook, event("UserPromptSubmit", prompt="p", prompt_id="p0"))
    times: dict[str, list[float]] = {"python -c pass": [], "file before": [],
                                     "file after": [], "prompt": []}
    for i in range(ROUNDS):
        times["python -c pass"].append(run([sys.executable, "-c", "pass"]))
        path = os.path.join(root, "d00", f"f{i:02}.txt")
        edit = {"tool_name": "Edit", "tool_use_id": f"t{i}",
                "tool_input": {"file_path": path, "old_string": "", "new_string": "x"}}
        times["file before"].append(run(hook, event("PreToolUse", **edit)))
        with open(path, "a") as out:
            out.write("x\n")
        times["file after"].append(run(hook, event("PostToolUse", **edit)))
        times["prompt"].append(run(hook, event("UserPromptSubmit", prompt=f"p{i}",
                                               prompt_id=f"q{i}")))
    for kind, samples in times.items():
        print(f"{kind}: median {statistics.median(samples) * 1000:.0f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
