"""`undostore diff` against `git diff-tree` on the same two trees, process against process, in the
same run:

- name-status between two 100,000-file snapshots that differ in 100 files
  (target: undostore <= 2x `git diff-tree -r --name-status`);
- `--patch` between snapshots that differ in 1,000 modified text files
  (target: <= 3x `git diff-tree -r --no-renames -p`).

    python benchmarks/bench_diff.py                      # 100k files (a few minutes to set up)
    python benchmarks/bench_diff.py --files 20000 --folders 1000 --repeats 5
    python benchmarks/bench_diff.py --workdir /tmp/bd --keep     # reuse the tree next time

Snapshot ids are checked against git's tree ids, and the outputs against git's (the patch up to
the abbreviated ids of `index` lines: git's own repository here holds loose objects, so git
abbreviates to 7 digits where a store of 100,000+ packed objects takes 9). Results are printed
and written as JSON to benchmarks/results/. The machine may be shared: see the load average.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import common  # noqa: E402
import gen_tree  # noqa: E402

RESULTS_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results")
SEED = 20261130
_INDEX_LINE = re.compile(rb"^index [0-9a-f]+\.\.[0-9a-f]+", re.MULTILINE)


def _files(root: str) -> list[str]:
    out = []
    for folder, dirs, names in os.walk(root):
        dirs.sort()
        out += [os.path.join(folder, name) for name in sorted(names)]
    return out


def _modify(paths: list[str], round_name: str) -> dict[str, bytes]:
    """Change a line in the middle of each file and add one at the end; returns the originals."""
    originals = {}
    for path in paths:
        with open(path, "rb") as f:
            data = f.read()
        originals[path] = data
        lines = data.split(b"\n")
        middle = len(lines) // 2
        lines[middle] = b"    changed = %s  # %d" % (round_name.encode(), middle)
        with open(path, "wb") as f:
            f.write(b"\n".join(lines) + b"\nappended line\n")
    return originals


def _restore(originals: dict[str, bytes]) -> None:
    for path, data in originals.items():
        with open(path, "wb") as f:
            f.write(data)


class Git:
    def __init__(self, tree: str, git_dir: str, env: dict[str, str]) -> None:
        self.tree = tree
        self.env = {**env, "GIT_DIR": git_dir, "GIT_WORK_TREE": tree,
                    "GIT_INDEX_FILE": os.path.join(git_dir, "index")}
        if not os.path.isdir(git_dir):
            subprocess.run(["git", "init", "-q", "--bare", git_dir], check=True, env=env)
            for key, value in (("core.autocrlf", "false"), ("core.bare", "false")):
                subprocess.run(["git", "--git-dir", git_dir, "config", key, value], check=True,
                               env=env)

    def run(self, *args: str) -> common.ProcessRun:
        return common.run_process(["git", *args], cwd=self.tree, env=self.env).check()

    def write_tree(self) -> str:
        self.run("add", "-A")
        return self.run("write-tree").stdout.strip()


def _snapshot(tree: str, store: str) -> str:
    from undostore import SnapshotOptions, Workspace

    with Workspace(tree, store) as ws:
        return ws.snapshot(options=SnapshotOptions(durable=False)).id


def _timed(argv: list[str], cwd: str, env: dict[str, str]) -> tuple[float, bytes]:
    started = time.perf_counter()
    done = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, stdin=subprocess.DEVNULL)
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} exited {done.returncode}: {done.stderr[-2000:]!r}")
    return seconds, done.stdout


def _compare(label: str, ours_argv: list[str], git_argv: list[str], tree: str,
             ours_env: dict[str, str], git_env: dict[str, str], repeats: int,
             same: callable) -> dict:  # noqa: ANN001
    ours_times, git_times = [], []
    ours_out = git_out = b""
    for i in range(repeats + 1):            # the first round only warms the caches
        pair = [("ours", ours_argv, ours_env), ("git", git_argv, git_env)]
        if i % 2:
            pair.reverse()
        for who, argv, env in pair:
            seconds, out = _timed(argv, tree, env)
            if who == "ours":
                ours_out = out
                if i:
                    ours_times.append(seconds)
            else:
                git_out = out
                if i:
                    git_times.append(seconds)
    ours, theirs = common.median(ours_times), common.median(git_times)
    return {"case": label, "undostore_s": ours, "git_s": theirs, "ratio": ours / theirs,
            "undostore_samples": ours_times, "git_samples": git_times,
            "output_lines": git_out.count(b"\n"), "same_output": same(ours_out, git_out)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=100_000)
    parser.add_argument("--folders", type=int, default=5_000)
    parser.add_argument("--changed", type=int, default=100, help="files changed for name-status")
    parser.add_argument("--patched", type=int, default=1_000, help="files changed for --patch")
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--workdir", help="where trees and stores go (default: a temp folder)")
    parser.add_argument("--keep", action="store_true", help="keep the workdir for the next run")
    args = parser.parse_args(argv)

    work = args.workdir or tempfile.mkdtemp(prefix="bench-diff-")
    os.makedirs(work, exist_ok=True)
    home = os.path.join(work, "home")
    os.makedirs(home, exist_ok=True)
    env = common.isolated_env(home, pycache_prefix=os.path.join(work, "pycache"))
    os.environ.update({k: v for k, v in env.items() if k.startswith("UNDOSTORE_")})
    tree = os.path.join(work, f"tree-{args.files}")
    store = os.path.join(work, f"store-{args.files}")
    try:
        started = time.perf_counter()
        info = gen_tree.ensure("tree", tree, files=args.files, folders=args.folders)
        print(f"tree: {info.files:,} files, {info.bytes / common.MB:.0f} MB "
              f"({time.perf_counter() - started:.0f} s)", file=sys.stderr)
        git = Git(tree, os.path.join(work, f"git-{args.files}.gitdir"), env)
        rng = random.Random(SEED)
        text_files = [p for p in _files(tree) if os.path.getsize(p) > 0]
        ids = {}
        gen_tree.forget(tree)             # modified below, and put back before `restored`
        for state, count in (("base", 0), ("named", args.changed), ("patched", args.patched)):
            originals = _modify(rng.sample(text_files, count), state)
            try:
                started = time.perf_counter()
                ours, theirs = _snapshot(tree, store), git.write_tree()
            finally:
                _restore(originals)
            if ours != theirs:
                raise RuntimeError(f"snapshot id {ours} differs from git's tree id {theirs}")
            ids[state] = ours
            print(f"state {state}: {ours} ({time.perf_counter() - started:.0f} s)",
                  file=sys.stderr)
        gen_tree.restored(tree)

        cli = next(iter(common.undostore_commands().values()))
        base = [*cli, "--root", tree, "--store", store, "diff"]
        results = [
            _compare(f"name-status, {args.files:,} files, {args.changed} changed",
                     [*base, ids["base"], ids["named"], "--name-status"],
                     ["git", "diff-tree", "-r", "--name-status", ids["base"], ids["named"]],
                     tree, env, git.env, args.repeats, lambda a, b: a == b),
            _compare(f"--patch, {args.patched:,} modified text files",
                     [*base, ids["base"], ids["patched"], "--patch"],
                     ["git", "diff-tree", "-r", "--no-renames", "-p", ids["base"],
                      ids["patched"]],
                     tree, env, git.env, args.repeats,
                     lambda a, b: _INDEX_LINE.sub(b"index", a) == _INDEX_LINE.sub(b"index", b)),
        ]
        targets = (2.0, 3.0)
        print(f"\nload average {common.load_average()} (shared machine: figures are noisy), "
              f"{platform.python_implementation()} {platform.python_version()}, "
              f"{common.tool_version(['git', '--version'])}, median of {args.repeats}\n")
        print("| case | undostore (s) | git (s) | ratio | target | output equal to git's |")
        print("|---|---|---|---|---|---|")
        for result, target in zip(results, targets, strict=True):
            result["target_ratio"] = target
            print(f"| {result['case']} | {result['undostore_s']:.3f} | {result['git_s']:.3f} "
                  f"| {result['ratio']:.2f}x | <= {target:g}x "
                  f"({'met' if result['ratio'] <= target else 'missed'}) "
                  f"| {'yes' if result['same_output'] else 'NO'} |")
        os.makedirs(RESULTS_DIR, exist_ok=True)
        out = os.path.join(RESULTS_DIR, time.strftime("diff-%Y%m%d-%H%M%S.json"))
        with open(out, "w", encoding="utf-8") as f:
            json.dump({"load_average": common.load_average(), "files": args.files,
                       "results": results}, f, indent=1)
        print(f"\nwritten to {out}", file=sys.stderr)
        return 0 if all(r["same_output"] for r in results) else 1
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
