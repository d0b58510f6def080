"""Python's `lstat` of every file of a tree, on one thread and on several: the floor of a walk
with nothing changed, and whether threads (as git's preload-index uses) lower it in CPython.

    python benchmarks/lstat_threads.py                       # the npm tree (npm_tree.py)
    python benchmarks/lstat_threads.py --tree /tmp/t20k --rounds 5

Each round times the serial list and then 2 and 4 threads (chunks of 512 paths each); the
paths are listed once, untimed.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from concurrent.futures import ThreadPoolExecutor

NPM_TREE = os.path.join(os.environ.get("UNDOSTORE_BENCH_CACHE", "/var/cache/undostore-bench"),
                        "npm-tree")
CHUNK = 512


def lstat_all(paths: list[str]) -> None:
    lstat = os.lstat
    for path in paths:
        lstat(path)


def timed_threads(paths: list[str], threads: int) -> float:
    chunks = [paths[i:i + CHUNK] for i in range(0, len(paths), CHUNK)]
    with ThreadPoolExecutor(threads) as pool:
        began = time.perf_counter()
        list(pool.map(lstat_all, chunks))
        return time.perf_counter() - began


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tree", default=NPM_TREE)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    paths = [os.path.join(folder, name) for folder, _, names in os.walk(args.tree)
             for name in names]
    print(f"{len(paths):,} files under {args.tree}")
    for _ in range(args.rounds):
        began = time.perf_counter()
        lstat_all(paths)
        serial = time.perf_counter() - began
        print(f"serial {serial:.3f} s  2 threads {timed_threads(paths, 2):.3f} s  "
              f"4 threads {timed_threads(paths, 4):.3f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
