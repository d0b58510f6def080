"""What a tool call's after event costs as a session grows: turns of shell calls on a tiny tree,
in-process (`Workspace.call_finished`), printing after every tenth turn the journal's size and
the median of that turn's calls. A real session spreads its calls over hours, so its activity
record stays small (five minutes of calls); this one runs them in minutes.

    UNDOSTORE_HOME=/tmp/ls/home python benchmarks/bench_long_session.py --root /tmp/ls/root \\
        --turns 50 --calls 40
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

from undostore import ToolCall, Workspace
from undostore.history.journal import journal_path
from undostore.history.toolcall import SHELL

FILES = 5


def _append(path: str, text: str) -> None:
    with open(path, "a", encoding="utf-8") as f:
        f.write(text)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", required=True, help="a new folder (made here)")
    parser.add_argument("--turns", type=int, default=50)
    parser.add_argument("--calls", type=int, default=40, help="shell calls per turn")
    args = parser.parse_args()
    os.makedirs(args.root, exist_ok=True)
    names = [os.path.join(args.root, f"f{i}.txt") for i in range(FILES)]
    for name in names:
        _append(name, "x\n")
    with Workspace(args.root) as ws:
        for turn in range(args.turns):
            ws.snapshot(session="s", label=f"turn {turn}")
            took = []
            for call in range(args.calls):
                call_id = f"c{turn}-{call}"
                ws.call_started(ToolCall(call_id, "Bash", SHELL, (), f"echo {turn} {call}"), "s")
                _append(names[call % FILES], f"{turn} {call}\n")
                started = time.perf_counter()
                ws.call_finished(call_id, "s")
                took.append(time.perf_counter() - started)
            if turn % 10 == 9 or turn == args.turns - 1:
                size = os.path.getsize(journal_path(ws.store, "s"))
                print(f"after {turn + 1} turns: journal {size / 1024:.0f} KB, a call's after "
                      f"event {statistics.median(took) * 1000:.1f} ms (median)", flush=True)


if __name__ == "__main__":
    main()
