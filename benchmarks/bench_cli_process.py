"""What the `undostore undo` process costs beyond the library call it makes.

    python benchmarks/bench_restore.py --cases npm-undo --fsmonitor watchman \\
        --workdir /tmp/br --repeats 1 --keep          # leaves npm-u, ustore-npm, session bench
    python benchmarks/bench_cli_process.py --workdir /tmp/br --fsmonitor watchman --repeats 8

Undo and redo alternate on a root whose session has an undo point (what bench_restore.py's
npm-undo case leaves with `--keep`). Each round times, interleaved so the machine's load falls
on all alike (wall clock from spawn to reap for processes):

- `python -c pass`: the interpreter with its site (an editable install's finder included);
- `import undostore_cli.main`: the interpreter plus the CLI's start-up imports;
- the library in a fresh process: `Workspace(root, store).undo(session)` and nothing else;
- the CLI process: `undostore --root R --store S undo --session bench --yes --json`;
- the library in this process (a warm `Workspace`, as bench_restore.py's library column).

The CLI minus the fresh-process library is what click and the CLI layer add; the fresh-process
library minus the warm one is what any process pays to load the code and the store's state.
"""

from __future__ import annotations

import argparse
import itertools
import os
import statistics
import sys
import time

import common

PAUSE_SECONDS = 0.1
LIBRARY_STEP = (
    "import sys\n"
    "from undostore import Workspace\n"
    "root, store, session, verb = sys.argv[1:5]\n"
    "with Workspace(root, store) as ws:\n"
    "    getattr(ws, verb)(session)\n"
)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workdir", help="bench_restore.py's work folder (npm-u, ustore-npm)")
    parser.add_argument("--root")
    parser.add_argument("--store")
    parser.add_argument("--session", default="bench")
    parser.add_argument("--repeats", type=int, default=8)
    parser.add_argument("--fsmonitor", choices=("auto", "watchman", "off"))
    args = parser.parse_args(argv)
    if args.workdir:
        args.root = args.root or os.path.join(args.workdir, "npm-u")
        args.store = args.store or os.path.join(args.workdir, "ustore-npm")
    if not (args.root and args.store):
        parser.error("give --workdir, or --root and --store")
    home = os.path.join(args.workdir or os.path.dirname(args.store), "home")
    os.makedirs(home, exist_ok=True)
    env = common.isolated_env(
        home, extra={"UNDOSTORE_FSMONITOR": args.fsmonitor} if args.fsmonitor else None)
    os.environ.clear()
    os.environ.update(env)  # the warm library sees what the children see (same fingerprint)

    from undostore import Workspace

    ws = Workspace(args.root, args.store)
    log = ws.log(args.session)
    if not (log.undo or log.redo):
        print(f"bench_cli_process: session {args.session!r} has nothing to undo or redo",
              file=sys.stderr)
        return 1
    state = {"verb": "undo" if log.undo else "redo"}
    py = sys.executable
    times: dict[str, list[float]] = {name: [] for name in (
        "python -c pass", "import undostore_cli.main", "library, fresh process",
        "CLI process", "library, warm (in this process)")}

    def step(name: str, argv: list[str] | None) -> None:
        verb = state["verb"]
        # A safety snapshot within 50 ms of the previous step's writes finds them racy and
        # leaves their folders to be read whole by the next step (43,000 entries in npm's icons
        # folder): an agent's turns are never that close, and the warm library could be.
        time.sleep(PAUSE_SECONDS)
        if hasattr(os, "sync"):
            os.sync()
        if argv is None:
            started = time.perf_counter()
            getattr(ws, verb)(args.session)
            times[name].append(time.perf_counter() - started)
        else:
            argv = [a.replace("{verb}", verb) for a in argv]
            times[name].append(common.run_process(argv, env=env).check().seconds)
        state["verb"] = "redo" if verb == "undo" else "undo"

    cli = [py, "-m", "undostore", "--root", args.root, "--store", args.store, "{verb}",
           "--session", args.session, "--yes", "--json"]
    lib = [py, "-c", LIBRARY_STEP, args.root, args.store, args.session, "{verb}"]
    steps = [("library, fresh process", lib), ("CLI process", cli),
             ("library, warm (in this process)", None)]
    orders = list(itertools.permutations(steps))
    for r in range(args.repeats):
        times["python -c pass"].append(common.run_process([py, "-c", "pass"], env=env).seconds)
        times["import undostore_cli.main"].append(
            common.run_process([py, "-c", "import undostore_cli.main"], env=env).seconds)
        order = orders[r % len(orders)]  # no kind always follows the same one
        for _ in range(2):  # each step once as undo and once as redo
            for name, argv in order:
                step(name, argv)
    ws.close()
    med = {name: statistics.median(v) for name, v in times.items()}
    print(f"\n{args.root} (fsmonitor {env.get('UNDOSTORE_FSMONITOR', 'default')}), "
          f"{args.repeats} rounds, load average {common.load_average()}")
    print("\n| what | median | min | samples |\n|---|---|---|---|")
    for name, values in times.items():
        print(f"| {name} | {med[name]:.3f} s | {min(values):.3f} s | "
              f"{', '.join(f'{v:.3f}' for v in values)} |")
    cli_s, fresh = med["CLI process"], med["library, fresh process"]
    warm, bare = med["library, warm (in this process)"], med["python -c pass"]
    print(f"\nCLI - library in a fresh process: {cli_s - fresh:+.3f} s; CLI - warm library: "
          f"{cli_s - warm:+.3f} s; CLI - warm library - interpreter: {cli_s - warm - bare:+.3f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
