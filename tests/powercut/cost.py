"""What the power-cut fixes cost on real journaled file systems (not a test; run by hand, root):

    python -m tests.powercut.cost --src-before /tmp/before --src-after . --fs ext4,xfs,btrfs

For each file system: a 1 GiB image (mkfs, losetup, mount), a 20,000-file tree (1,000 folders),
snapshot A, 2,000 files changed, snapshot B; then restores A, B, A, ... alternate, each in a fresh
process running the library from `--src-before` or `--src-after` (the two alternate too, so load
on the shared machine hits both alike), after an untimed `sync`. Also timed: a no-change
`snapshot` (the op log's fsync) and creating a store with its first snapshot of 20 files.
Prints the medians in seconds.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

CHILD = """
import sys, time
sys.path.insert(0, sys.argv[1])
from undostore import Workspace
import undostore
assert undostore.__file__.startswith(sys.argv[1]), undostore.__file__
op, root = sys.argv[2], sys.argv[3]
ws = Workspace(root)
start = time.perf_counter()
if op == "restore":
    ws.restore(sys.argv[4])
else:
    ws.snapshot()
print(time.perf_counter() - start)
"""


def _child(src: str, *args: str, env: dict) -> float:
    out = subprocess.run([sys.executable, "-c", CHILD, os.path.abspath(src), *args],
                         capture_output=True, text=True, env=env, check=True)
    return float(out.stdout.split()[-1])


def _mount(kind: str, image: str, point: str) -> str:
    with open(image, "wb") as f:
        f.truncate(1 << 30)
    mkfs = {"ext4": ["mkfs.ext4", "-q", "-F"], "xfs": ["mkfs.xfs", "-q", "-f"],
            "btrfs": ["mkfs.btrfs", "-q", "-f"]}[kind]
    subprocess.run([*mkfs, image], check=True, capture_output=True)
    dev = subprocess.run(["losetup", "-f", "--show", image], check=True, capture_output=True,
                         text=True).stdout.strip()
    os.makedirs(point, exist_ok=True)
    subprocess.run(["mount", dev, point], check=True)
    return dev


def _tree(root: str, version: int, changed: int) -> None:
    for i in range(20_000):
        folder = os.path.join(root, f"d{i % 1000}")
        os.makedirs(folder, exist_ok=True)
        v = version if i < changed else 0
        with open(os.path.join(folder, f"f{i}"), "w") as f:
            f.write(f"file {i} version {v}\n" * 20)


def measure(kind: str, before: str, after: str, repeats: int, work: str) -> dict:
    image, point = os.path.join(work, f"{kind}.img"), os.path.join(work, kind)
    dev = _mount(kind, image, point)
    try:
        root, home = os.path.join(point, "root"), os.path.join(point, "home")
        env = {**os.environ, "UNDOSTORE_HOME": home, "WATCHMAN_SOCK": "/nonexistent"}
        _tree(root, 1, 0)
        _child(after, "snapshot", root, env=env)
        ids = []
        for version in (1, 2):
            _tree(root, version, 2_000)
            out = subprocess.run([sys.executable, "-c", "import sys; sys.path.insert(0, sys.argv"
                                  "[1]); from undostore import Workspace; print(Workspace("
                                  "sys.argv[2]).snapshot().id)", after, root],
                                 capture_output=True, text=True, env=env, check=True)
            ids.append(out.stdout.strip())
        times: dict[str, list[float]] = {}
        for n in range(repeats):
            for label, src in (("before", before), ("after", after)) if n % 2 == 0 else (
                    ("after", after), ("before", before)):
                for target in (ids[0], ids[1]):
                    subprocess.run(["sync"])
                    times.setdefault(f"restore {label}", []).append(
                        _child(src, "restore", root, target, env=env))
                subprocess.run(["sync"])
                times.setdefault(f"snapshot-nochange {label}", []).append(
                    _child(src, "snapshot", root, env=env))
                small = tempfile.mkdtemp(dir=point)
                for i in range(20):
                    with open(os.path.join(small, f"s{i}"), "w") as f:
                        f.write("x")
                subprocess.run(["sync"])
                env_small = {**env, "UNDOSTORE_HOME": small + ".home"}
                times.setdefault(f"first-snapshot {label}", []).append(
                    _child(src, "snapshot", small, env=env_small))
        return {key: statistics.median(values) for key, values in times.items()}
    finally:
        subprocess.run(["umount", point])
        subprocess.run(["losetup", "-d", dev])
        os.unlink(image)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--src-before", required=True)
    parser.add_argument("--src-after", default=".")
    parser.add_argument("--fs", default="ext4,xfs,btrfs")
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    work = tempfile.mkdtemp(prefix="undostore-cost-")
    try:
        for kind in args.fs.split(","):
            started = time.monotonic()
            result = measure(kind, args.src_before, args.src_after, args.repeats, work)
            print(kind, " ".join(f"{k}={v:.3f}" for k, v in sorted(result.items())),
                  f"({time.monotonic() - started:.0f} s)", flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
