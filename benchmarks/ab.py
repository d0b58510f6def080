"""Commands timed round by round, interleaved, so a noisy machine's swings fall on all alike.

    python benchmarks/ab.py --rounds 40 \\
        'before=/tmp/va/bin/undostore --root T --store S snapshot' \\
        'after=/tmp/vb/bin/undostore --root T --store S snapshot' \\
        'git=cd T && git add -A'

Each argument is `name=shell command`. Every round runs each command once, in order, its
output and errors thrown away; the table gives the median, the 25th percentile and the minimum
of the wall time from spawn to reap, and the median of the CPU time (user + system) the child
used. A command that fails stops the run.
"""

from __future__ import annotations

import argparse
import resource
import statistics
import subprocess
import sys
import time


def _cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("commands", nargs="+", metavar="NAME=COMMAND")
    args = parser.parse_args(argv)
    named = [command.partition("=")[::2] for command in args.commands]
    if any(not name or not command for name, command in named):
        parser.error("each command is NAME=COMMAND")
    wall: dict[str, list[float]] = {name: [] for name, _ in named}
    cpu: dict[str, list[float]] = {name: [] for name, _ in named}
    for _ in range(args.rounds):
        for name, command in named:
            cpu_before, started = _cpu_seconds(), time.perf_counter()
            done = subprocess.run(command, shell=True, stdout=subprocess.DEVNULL,
                                  stderr=subprocess.DEVNULL, check=False)
            wall[name].append(time.perf_counter() - started)
            cpu[name].append(_cpu_seconds() - cpu_before)
            if done.returncode != 0:
                print(f"{name}: exit status {done.returncode}: {command}", file=sys.stderr)
                return 1
    print(f"{args.rounds} rounds\n\n| command | wall median | p25 | min | CPU median |\n"
          "|---|---:|---:|---:|---:|")
    for name, _ in named:
        times = sorted(wall[name])
        print(f"| {name} | {statistics.median(times) * 1e3:.1f} ms | "
              f"{times[len(times) // 4] * 1e3:.1f} ms | {times[0] * 1e3:.1f} ms | "
              f"{statistics.median(cpu[name]) * 1e3:.1f} ms |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
