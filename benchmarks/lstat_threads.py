"""Python's `lstat` of every file of a tree, on one thread, on several, and split with a forked
process: the floor of a walk with nothing changed, and whether threads (as git's preload-index
uses) or a second process lower it in CPython.

    python benchmarks/lstat_threads.py                       # the npm tree (npm_tree.py)
    python benchmarks/lstat_threads.py --tree /tmp/t20k --rounds 5 --ballast-mb 40

Each round times the serial list, 2 and 4 threads (chunks of 512 paths each), then a fork whose
child lstats the second half while this process does the first: the child answers one byte (as
a child that compared its half with the stat cache it inherited and found nothing changed
would), or every stat packed (40 bytes a file: a child that leaves the comparing here). A fork
copies the page tables of the whole process: `--ballast-mb` holds that much in small objects
first, as a hook holds its imports and stat cache. "to answer" stops at the child's answer;
"reaped" also waits for its exit. The paths are listed once, untimed.
"""

from __future__ import annotations

import argparse
import os
import struct
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


_PACKED = struct.Struct("<5q")


def _child_half(paths: list[str], answer: int, packed: bool) -> None:
    lstat = os.lstat
    if not packed:
        lstat_all(paths)
        os.write(answer, b"x")
        return
    out = bytearray()
    pack = _PACKED.pack
    for path in paths:
        st = lstat(path)
        out += pack(st.st_mtime_ns, st.st_ctime_ns, st.st_size, st.st_ino, st.st_mode)
    view = memoryview(out)
    while view:
        view = view[os.write(answer, view):]


def timed_fork(paths: list[str], packed: bool) -> tuple[float, float]:
    """(seconds to the child's answer, seconds to its exit reaped)."""
    half = len(paths) // 2
    began = time.perf_counter()
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            os.close(read_end)
            _child_half(paths[half:], write_end, packed)
            code = 0
        finally:
            os._exit(code)
    os.close(write_end)
    lstat_all(paths[:half])
    while os.read(read_end, 1 << 20):
        pass
    answered = time.perf_counter() - began
    os.close(read_end)
    os.waitpid(pid, 0)
    return answered, time.perf_counter() - began


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tree", default=NPM_TREE)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--ballast-mb", type=int, default=0,
                        help="small objects held before forking (a hook's heap)")
    args = parser.parse_args(argv)
    ballast = [str(i) for i in range(args.ballast_mb * 1_000_000 // 56)]
    paths = [os.path.join(folder, name) for folder, _, names in os.walk(args.tree)
             for name in names]
    print(f"{len(paths):,} files under {args.tree}")
    for _ in range(args.rounds):
        began = time.perf_counter()
        lstat_all(paths)
        serial = time.perf_counter() - began
        line = (f"serial {serial:.3f} s  2 threads {timed_threads(paths, 2):.3f} s  "
                f"4 threads {timed_threads(paths, 4):.3f} s")
        if hasattr(os, "fork"):
            for packed in (False, True):
                answered, reaped = timed_fork(paths, packed)
                line += (f"  fork, {'packed' if packed else 'one byte'}: {answered:.3f} s to "
                         f"answer, {reaped:.3f} s reaped")
        print(line)
    del ballast
    return 0


if __name__ == "__main__":
    sys.exit(main())
