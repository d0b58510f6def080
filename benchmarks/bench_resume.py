"""A tree's first snapshot: what its checkpoints cost, and what a try killed part-way saves.

    python benchmarks/bench_resume.py                          # the npm tree (npm_tree.py)
    python benchmarks/bench_resume.py --tree /tmp/c80k --pairs 4 --kill-at 0.5

The library in this process, a fresh store each run, the page cache warm (one untimed run
first): first snapshots with checkpoints every `Limits.checkpoint_s` (5 s) and with none,
alternating, `--pairs` times; then a first snapshot in a child process killed (SIGKILL) at
`--kill-at` of the median run's time, and the next run's time and files read. No watchman.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

NPM_TREE = os.path.join(os.environ.get("UNDOSTORE_BENCH_CACHE", "/var/cache/undostore-bench"),
                        "npm-tree")
NEVER = 1e9   # a checkpoint interval no run reaches


def first_snapshot(tree: str, checkpoint_s: float) -> float:
    """Seconds of one first snapshot of `tree` into a fresh store."""
    from undostore import Workspace
    from undostore.limits import Limits

    home = tempfile.mkdtemp(prefix="bench-resume-")
    os.environ["UNDOSTORE_HOME"] = home
    try:
        began = time.perf_counter()
        with Workspace(tree, limits=Limits(checkpoint_s=checkpoint_s)) as ws:
            ws.snapshot()
        return time.perf_counter() - began
    finally:
        shutil.rmtree(home, ignore_errors=True)


def killed_then_resumed(tree: str, after: float) -> str:
    """A first snapshot killed `after` seconds in, then the next one: what it kept and took."""
    from undostore import Workspace

    home = tempfile.mkdtemp(prefix="bench-resume-")
    child = subprocess.Popen(
        [sys.executable, "-c", "import sys\nfrom undostore import Workspace\n"
                               "with Workspace(sys.argv[1]) as ws: ws.snapshot()", tree],
        env={**os.environ, "UNDOSTORE_HOME": home})
    time.sleep(after)
    child.send_signal(signal.SIGKILL)
    child.wait()
    os.environ["UNDOSTORE_HOME"] = home
    try:
        with Workspace(tree) as ws:
            kept = ws.first_snapshot_kept()
            began = time.perf_counter()
            result = ws.snapshot()
            took = time.perf_counter() - began
    finally:
        shutil.rmtree(home, ignore_errors=True)
    files = kept.files if kept is not None else 0
    seconds = kept.seconds if kept is not None else 0.0
    return (f"killed after {after:.1f} s: kept {files:,} files ({seconds:.1f} s of reading); "
            f"the next run {took:.2f} s, reading {result.hashed:,} of {result.files:,} files")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tree", default=NPM_TREE, help="the tree (default: the npm tree)")
    parser.add_argument("--pairs", type=int, default=6, help="alternating pairs (default 6)")
    parser.add_argument("--kill-at", type=float, default=0.75,
                        help="share of the median run's time at which the try is killed")
    args = parser.parse_args(argv)
    if not os.path.isdir(args.tree):
        parser.error(f"{args.tree}: no such tree (benchmarks/npm_tree.py makes the npm one)")
    os.environ["UNDOSTORE_FSMONITOR"] = "off"
    first_snapshot(args.tree, NEVER)   # the page cache warm
    runs: dict[float, list[float]] = {5.0: [], NEVER: []}
    for _ in range(args.pairs):
        for interval, times in runs.items():
            times.append(first_snapshot(args.tree, interval))
    for interval, times in runs.items():
        label = "every 5 s" if interval == 5.0 else "none"
        print(f"checkpoints {label}: median {statistics.median(times):.2f} s "
              f"(min {min(times):.2f}, max {max(times):.2f})")
    print(killed_then_resumed(args.tree, statistics.median(runs[NEVER]) * args.kill_at))
    return 0


if __name__ == "__main__":
    sys.exit(main())
