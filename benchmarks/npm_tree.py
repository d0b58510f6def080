"""A real tree for the benchmarks: an npm `node_modules` of ~80,000 files, installed once into a
cache folder outside the repository and reused by every later run.

    python benchmarks/npm_tree.py                # install if missing, print where and how big
    python benchmarks/npm_tree.py --copy /tmp/nm # a private copy to benchmark on

The cache is `$UNDOSTORE_BENCH_CACHE`, else `/var/cache/undostore-bench` (`npm-tree/`, with its
`package.json` and `package-lock.json`). A marker `npm-tree.json` written after a complete install
records the packages, the resolved versions and the counts; without it (an interrupted install)
the folder is installed again. Benchmarks never change the cached tree: they work on a copy
(`copy_tree`), since a restore rewrites files and an edit in place would change the cache.

Needs `npm` on PATH and the npm registry; `--ignore-scripts`, so no package code runs.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time

PACKAGES = ("typescript", "next", "webpack", "jest", "@mui/icons-material", "aws-sdk",
            "date-fns")
DEFAULT_CACHE = "/var/cache/undostore-bench"


def cache_dir() -> str:
    return os.environ.get("UNDOSTORE_BENCH_CACHE") or DEFAULT_CACHE


def tree_path() -> str:
    return os.path.join(cache_dir(), "npm-tree")


def _marker() -> str:
    return os.path.join(cache_dir(), "npm-tree.json")


def counts(root: str) -> dict[str, int]:
    """Files (anything not a folder, symlinks included), folders and apparent bytes below root."""
    files = folders = size = 0
    for _, dirs, names in os.walk(root):
        folders += len(dirs)
        files += len(names)
    for folder, _, names in os.walk(root):
        for name in names:
            try:
                size += os.lstat(os.path.join(folder, name)).st_size
            except OSError:
                pass
    return {"files": files, "folders": folders, "bytes": size}


def ensure(log=print) -> dict[str, object]:  # noqa: ANN001 (a print-like callable)
    """The cached tree's marker record, installing the tree first if it is not complete."""
    try:
        with open(_marker(), encoding="utf-8") as f:
            record = json.load(f)
        if record.get("packages") == list(PACKAGES) and os.path.isdir(
                os.path.join(tree_path(), "node_modules")):
            return record
    except (OSError, ValueError):
        pass
    if shutil.which("npm") is None:
        raise RuntimeError("the npm tree needs `npm` on PATH (apt-get install npm)")
    path = tree_path()
    if os.path.exists(path):
        shutil.rmtree(path)
    os.makedirs(path)
    with open(os.path.join(path, "package.json"), "w", encoding="utf-8") as f:
        json.dump({"name": "undostore-bench-npm", "version": "1.0.0", "private": True}, f)
    log(f"installing {' '.join(PACKAGES)} into {path} (once; a few minutes)")
    started = time.perf_counter()
    subprocess.run(["npm", "install", "--no-audit", "--no-fund", "--ignore-scripts",
                    "--loglevel=error", *PACKAGES], cwd=path, check=True,
                   stdin=subprocess.DEVNULL)
    return record_install(path, time.perf_counter() - started)


def record_install(path: str, seconds: float) -> dict[str, object]:
    """Write the marker of a complete install at `path` (versions from its package-lock)."""
    with open(os.path.join(path, "package-lock.json"), encoding="utf-8") as f:
        lock = json.load(f)
    versions = {name.removeprefix("node_modules/"): info.get("version")
                for name, info in lock.get("packages", {}).items()
                if name.removeprefix("node_modules/") in PACKAGES}
    record = {"packages": list(PACKAGES), "versions": versions,
              "installed": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
              "install_seconds": round(seconds, 1), **counts(path)}
    with open(_marker(), "w", encoding="utf-8") as f:
        json.dump(record, f, indent=1)
    return record


def copy_tree(dest: str) -> None:
    """A private copy of the cached tree at `dest` (kept if an earlier complete copy is there)."""
    done = os.path.normpath(dest) + ".copied"
    if os.path.exists(done) and os.path.isdir(dest):
        return
    if os.path.exists(done):
        os.unlink(done)
    if os.path.exists(dest):
        shutil.rmtree(dest)
    subprocess.run(["cp", "-a", "--reflink=auto", tree_path(), dest], check=True)
    open(done, "w").close()


def mark_copied(dest: str) -> None:
    """Mark a copy as equal to the cache again (a benchmark put every file back)."""
    open(os.path.normpath(dest) + ".copied", "w").close()


def forget_copy(dest: str) -> None:
    """Mark a copy as not to be reused (it is being modified)."""
    done = os.path.normpath(dest) + ".copied"
    if os.path.exists(done):
        os.unlink(done)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--copy", metavar="DEST", help="also make a private copy at DEST")
    args = parser.parse_args(argv)
    record = ensure(log=lambda m: print(m, file=sys.stderr))
    print(json.dumps({"path": tree_path(), **record}, indent=1))
    if args.copy:
        copy_tree(args.copy)
    return 0


if __name__ == "__main__":
    sys.exit(main())
