"""gc and undo-point cost: 200 snapshots of a 20,000-file tree with a few changes each.

    python benchmarks/bench_gc.py                       # the issue's case (~1-2 minutes)
    python benchmarks/bench_gc.py --snapshots 40        # a quicker look
    python benchmarks/bench_gc.py --keep --workdir /tmp/bgc

Setup: a deterministic tree (gen_tree), then `--snapshots` rounds of "change `--changes` files,
snapshot, record an undo point", spread over sessions of 50 points each so every snapshot stays
listed (automatic gc off). Recording is timed on its own (`record_undo_point` under the lock,
right after `take_snapshot`): the issue's target is <= 10 ms beyond the snapshot.

Then gc runs in fresh child processes over the same store:
- `gc`: the full collection with grace 0 (every pack eligible): wall time and peak RSS
  (/usr/bin/time, see common.py); target < 5 s and < 200 MB;
- `gc (tracemalloc)`: the same on a copy of the store, reporting Python's peak allocations;
- `gc again`: a second collection (grace 0) with nothing to prune;
- `verify`: every object of every journal read and hashed;
- `drop-gc`: drop the older half of the sessions, then collect what only they kept.
Results are printed as markdown and written as JSON to benchmarks/results/gc-<time>.json.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import shutil
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import common  # noqa: E402
import gen_tree  # noqa: E402
from common import MB, dir_usage, fmt_mb, fmt_seconds  # noqa: E402

RESULTS_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results")
POINTS_PER_SESSION = 50
GC_SECONDS_TARGET = 5.0
GC_MEMORY_TARGET = 200 * MB
RECORD_MS_TARGET = 10.0

_CHILD = """
import json, sys, time, tracemalloc
from undostore import Workspace
what, root, store, trace = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4] == "1"
if trace:
    tracemalloc.start()
ws = Workspace(root, store)
started = time.perf_counter()
if what == "gc":
    out = ws.gc(grace_seconds=0).to_json()
elif what == "drop-gc":   # forget the older half of the sessions, then collect
    names = sorted(s.name for s in ws.sessions())
    for name in names[:len(names) // 2]:
        ws.drop(name)
    started = time.perf_counter()
    out = ws.gc(grace_seconds=0).to_json()
else:
    result = ws.verify()
    out = {"ok": result.ok, "checked": result.checked, "snapshots": len(result.snapshots)}
out["wall"] = time.perf_counter() - started
if trace:
    out["traced_peak"] = tracemalloc.get_traced_memory()[1]
print(json.dumps(out))
"""


def build_store(workdir: str, files: int, folders: int, snapshots: int, changes: int,
                seed: int) -> dict[str, object]:
    """The tree, the store, and the timings of the setup rounds."""
    from undostore import Workspace
    from undostore.history.sessions import record_undo_point
    from undostore.snapshot.snapshot import SnapshotOptions, take_snapshot

    root = os.path.join(workdir, "tree")
    store = os.path.join(workdir, "store")
    os.makedirs(root)
    info = gen_tree.make_tree(root, files=files, folders=folders, seed=seed)
    paths = sorted(os.path.relpath(os.path.join(d, f), root)
                   for d, _, names in os.walk(root) for f in names)
    rng = random.Random(seed)
    ws = Workspace(root, store)
    snapshot_seconds: list[float] = []
    record_ms: list[float] = []
    started = time.perf_counter()
    for turn in range(snapshots):
        for path in rng.sample(paths, changes):
            with open(os.path.join(root, path), "a") as f:
                f.write(f"# turn {turn}\n")
        with ws.store.lock:
            t0 = time.perf_counter()
            result = take_snapshot(ws.root, ws.store, SnapshotOptions())
            t1 = time.perf_counter()
            record_undo_point(ws.store, f"agent-{turn // POINTS_PER_SESSION}", result.id,
                              f"turn {turn}", {"turn": turn, "messages": 2 * turn})
            t2 = time.perf_counter()
        snapshot_seconds.append(t1 - t0)
        record_ms.append((t2 - t1) * 1000)
    ws.close()
    return {"root": root, "store": store, "files": info.files, "bytes": info.bytes,
            "setup_seconds": time.perf_counter() - started,
            "snapshot_median": statistics.median(snapshot_seconds),
            "record_ms_median": statistics.median(record_ms),
            "record_ms_p95": sorted(record_ms)[int(len(record_ms) * 0.95) - 1],
            "record_ms_max": max(record_ms)}


def run_child(what: str, root: str, store: str, trace: bool, env: dict[str, str]
              ) -> dict[str, object]:
    run = common.run_process([sys.executable, "-c", _CHILD, what, root, store,
                              "1" if trace else "0"], env=env, measure_memory=True).check()
    out = json.loads(run.stdout)
    out["process_seconds"] = run.seconds
    out["peak_rss"] = run.peak_rss
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--files", type=int, default=20_000)
    parser.add_argument("--folders", type=int, default=1_000)
    parser.add_argument("--snapshots", type=int, default=200)
    parser.add_argument("--changes", type=int, default=5, help="files changed per snapshot")
    parser.add_argument("--seed", type=int, default=gen_tree.DEFAULT_SEED)
    parser.add_argument("--workdir", default=None, help="folder to work in (default: a temp one)")
    parser.add_argument("--keep", action="store_true", help="keep the work folder")
    args = parser.parse_args(argv)

    workdir = args.workdir or tempfile.mkdtemp(prefix="undostore-bench-gc-")
    os.makedirs(workdir, exist_ok=True)
    home = os.path.join(workdir, "home")
    os.makedirs(home, exist_ok=True)
    env = common.isolated_env(home, extra={"UNDOSTORE_GC_EVERY": "0"})
    os.environ.update({k: v for k, v in env.items() if k.startswith(("UNDOSTORE_", "HOME"))})
    try:
        setup = build_store(workdir, args.files, args.folders, args.snapshots, args.changes,
                            args.seed)
        root, store = str(setup["root"]), str(setup["store"])
        traced_store = os.path.join(workdir, "store-traced")
        shutil.copytree(store, traced_store)
        before = dir_usage(store)
        gc_run = run_child("gc", root, store, False, env)
        after = dir_usage(store)
        traced = run_child("gc", root, traced_store, True, env)
        again = run_child("gc", root, store, False, env)
        verified = run_child("verify", root, store, False, env)
        dropped = run_child("drop-gc", root, store, False, env)
        after_drop = dir_usage(store)
    finally:
        if not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)

    rows = [
        ("setup: snapshot (median)", fmt_seconds(setup["snapshot_median"]) + " s", ""),
        ("record undo point (median / p95 / max)",
         f"{setup['record_ms_median']:.2f} / {setup['record_ms_p95']:.2f} / "
         f"{setup['record_ms_max']:.2f} ms", f"<= {RECORD_MS_TARGET:g} ms"),
        ("gc: wall (in process / whole process)",
         f"{fmt_seconds(gc_run['wall'])} / {fmt_seconds(gc_run['process_seconds'])} s",
         f"< {GC_SECONDS_TARGET:g} s"),
        ("gc: peak RSS of the process", f"{fmt_mb(gc_run['peak_rss'])} MB",
         f"< {GC_MEMORY_TARGET / MB:g} MB"),
        ("gc: Python peak allocations (tracemalloc)", f"{fmt_mb(traced['traced_peak'])} MB", ""),
        ("gc: objects before -> after", f"{gc_run['objects_before']:,} -> "
         f"{gc_run['objects_after']:,}", ""),
        ("gc: packs before -> after", f"{gc_run['packs_before']} -> {gc_run['packs_after']}", ""),
        ("store on disk before -> after", f"{fmt_mb(before.disk)} -> {fmt_mb(after.disk)} MB", ""),
        ("gc again, grace 0 (nothing to prune)", f"{fmt_seconds(again['wall'])} s", ""),
        ("gc after dropping half the sessions",
         f"{fmt_seconds(dropped['wall'])} s, freed {fmt_mb(dropped['freed_bytes'])} MB, "
         f"objects {dropped['objects_before']:,} -> {dropped['objects_after']:,}, store "
         f"{fmt_mb(after_drop.disk)} MB", ""),
        ("verify (every object read and hashed)",
         f"{fmt_seconds(verified['wall'])} s, {verified['checked']:,} objects, ok="
         f"{verified['ok']}", ""),
    ]
    print(f"## gc: {args.snapshots} snapshots of a {setup['files']:,}-file tree, "
          f"{args.changes} changes each\n")
    print(f"{platform.python_implementation()} {platform.python_version()}, "
          f"{os.cpu_count()} cores, load {common.load_average()}, memory: "
          f"{common.memory_method()}\n")
    print("| measure | value | target |\n|---|---|---|")
    for name, value, target in rows:
        print(f"| {name} | {value} | {target} |")

    ok = (float(gc_run["wall"]) < GC_SECONDS_TARGET
          and (gc_run["peak_rss"] is None or int(gc_run["peak_rss"]) < GC_MEMORY_TARGET)
          and float(setup["record_ms_median"]) <= RECORD_MS_TARGET and verified["ok"])
    os.makedirs(RESULTS_DIR, exist_ok=True)
    out_path = os.path.join(RESULTS_DIR, time.strftime("gc-%Y%m%d-%H%M%S.json"))
    with open(out_path, "w") as f:
        json.dump({"args": vars(args), "setup": {k: v for k, v in setup.items()
                                                 if k not in ("root", "store")},
                   "gc": gc_run, "gc_traced": traced, "gc_again": again, "verify": verified,
                   "drop_gc": dropped, "store_before": before.__dict__,
                   "store_after": after.__dict__, "store_after_drop": after_drop.__dict__,
                   "targets_met": ok}, f, indent=2)
    print(f"\nresults: {os.path.relpath(out_path)}; targets {'met' if ok else 'NOT met'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
