"""What each hook call costs a turn: turns of 20 calls (15 file tools, 5 shells) sent through
the real hook process as Claude Code sends them, with the floors and git timed in the same run;
every tree given, with the resident process on (the default) and off, without and with watchman.

    python benchmarks/gen_tree.py tree /tmp/bt/t --files 20000
    python benchmarks/bench_tool_calls.py --root /tmp/bt/t --workdir /tmp/bt/w --rounds 5
    python benchmarks/bench_tool_calls.py --root T1 --root T2 ... --resident on,off \
        --fsmonitor off,watchman                       # the whole matrix in one run

Each round is one turn: a prompt (`UserPromptSubmit`), then 20 calls, each a `PreToolUse`, its
change and a `PostToolUse` (every fourth a shell, `Bash`, whose command appends a line to a file;
the others an `Edit` of one file, which appends a line to it), then `Stop`. Every hook process is
timed from spawn to reap. Between turns, interleaved so the machine's load falls on all alike:
`python -c pass` (the interpreter's start, the floor of any hook), the walk's floor (a bare
Python that starts and lstats every file of the tree: what no walk in Python beats), the
footer's `undostore status` (as Claude Code's status line runs it), `undostore snapshot` with
nothing changed (a no-change snapshot in its own process) and git's `status` over the tree (a
private git folder, its index made once). Each configuration has its own home and store (the
first snapshot is not timed) and its resident process is stopped after it. The table gives
medians per kind of event and the ratios the targets name (the prompt hook against the walk's
floor; a file tool's before event against a no-change snapshot; a shell call's two events
against one).

`--python` names the interpreter whose console script is timed (a regular install, as users have
it; the default is this one). Bytecode is kept in the work folder, as an installed package has it.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence

import common

CALLS_PER_TURN = 20
SHELL_EVERY = 4          # every fourth call a shell: 15 file tools and 5 shells per turn
# A bare Python that starts and lstats every file of the tree (argv[1]): the walk's floor.
LSTAT_FLOOR = ("import os, sys\n"
               "for folder, dirs, files in os.walk(sys.argv[1]):\n"
               "    dirs[:] = [d for d in dirs if d != '.git']\n"
               "    for name in files:\n"
               "        os.lstat(os.path.join(folder, name))\n")


class Timer:
    """Wall times of processes, by kind."""

    def __init__(self, env: dict[str, str], cwd: str) -> None:
        self.env, self.cwd = env, cwd
        self.times: dict[str, list[float]] = {}

    def run(self, kind: str, argv: Sequence[str], stdin: str | None = None) -> float:
        started = time.perf_counter()
        done = subprocess.run(argv, input=stdin, text=True, capture_output=True, env=self.env,
                              cwd=self.cwd, check=False)
        took = time.perf_counter() - started
        if done.returncode != 0:
            raise SystemExit(f"{kind}: exit status {done.returncode}: {done.stderr.strip()}")
        self.times.setdefault(kind, []).append(took)
        return took

    def median_ms(self, kind: str) -> float:
        return statistics.median(self.times[kind]) * 1e3


def _event(root: str, name: str, **fields: object) -> str:
    return json.dumps({"session_id": "bench", "cwd": root, "hook_event_name": name, **fields})


def _turn(timer: Timer, hook: list[str], root: str, files: list[str], turn: int) -> None:
    timer.run("prompt", hook, _event(root, "UserPromptSubmit", prompt=f"turn {turn}",
                                     prompt_id=f"p{turn}"))
    for i in range(CALLS_PER_TURN):
        path = os.path.join(root, files[(turn * CALLS_PER_TURN + i) % len(files)])
        call_id = f"t{turn}-{i}"
        if i % SHELL_EVERY == SHELL_EVERY - 1:
            tool, tool_input, kind = "Bash", {"command": f"echo {i} >> {path}"}, "shell"
        else:
            tool, tool_input, kind = "Edit", {"file_path": path, "old_string": "",
                                              "new_string": f"{i}\n"}, "file"
        before = timer.run(f"{kind} before", hook, _event(
            root, "PreToolUse", tool_name=tool, tool_input=tool_input, tool_use_id=call_id))
        with open(path, "a", encoding="utf-8") as f:
            f.write(f"call {call_id}\n")
        after = timer.run(f"{kind} after", hook, _event(
            root, "PostToolUse", tool_name=tool, tool_input=tool_input, tool_use_id=call_id))
        timer.times.setdefault(f"{kind} call (both)", []).append(before + after)
    timer.run("stop", hook, _event(root, "Stop"))


def _files(root: str, count: int) -> list[str]:
    """`count` regular files of the tree (a fixed pick: the same in every run)."""
    found = []
    for folder, dirs, names in os.walk(root):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        found += [os.path.relpath(os.path.join(folder, n), root) for n in sorted(names)
                  if not n.startswith(".")]
        if len(found) >= count * 10:
            break
    return found[::10][:count]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", required=True, action="append",
                        help="a tree (gen_tree.py, npm_tree.py); give it again for more")
    parser.add_argument("--workdir", required=True, help="homes, bytecode and git's folders")
    parser.add_argument("--rounds", type=int, default=5, help="turns of 20 calls")
    parser.add_argument("--python", default=sys.executable)
    parser.add_argument("--resident", default="on",
                        help="on (the default on Linux and macOS), off, or both: on,off")
    parser.add_argument("--fsmonitor", default="off", help="off, watchman, or both: off,watchman")
    args = parser.parse_args(argv)
    os.makedirs(args.workdir, exist_ok=True)
    rows = []
    for root in (os.path.abspath(r) for r in args.root):
        for fsmonitor in args.fsmonitor.split(","):
            for resident in args.resident.split(","):
                rows.append(_configuration(args, root, resident, fsmonitor))
    print(f"\n{args.rounds} turns of {CALLS_PER_TURN} calls per configuration; "
          f"load {common.load_average()}; medians in ms (the resident process is on by default)")
    print("\n| tree | watchman | resident | prompt hook | file tool (before + after) | "
          "shell (before + after) | status | python -c pass | walk floor | no-change snapshot "
          "| git status | prompt / floor | file before / snapshot | shell / snapshot |")
    print("|---|---|---|" + "---:|" * 12)
    for row in rows:
        cells = [row[k] for k in ("prompt", "file call (both)", "shell call (both)", "status",
                                  "python -c pass", "walk floor", "no-change snapshot",
                                  "git status")]
        print(f"| {row['tree']} | {row['fsmonitor']} | {row['resident']} | "
              + " | ".join(f"{c:.0f}" for c in cells)
              + f" | {row['prompt'] / row['walk floor']:.2f}x"
              f" | {row['file before'] / row['no-change snapshot']:.2f}x"
              f" | {row['shell call (both)'] / row['no-change snapshot']:.2f}x |")
    print("\nEach event alone (ms):\n\n| tree | watchman | resident | file before | file after "
          "| shell before | shell after | stop |\n|---|---|---|---:|---:|---:|---:|---:|")
    for row in rows:
        print(f"| {row['tree']} | {row['fsmonitor']} | {row['resident']} | "
              + " | ".join(f"{row[k]:.0f}" for k in ("file before", "file after", "shell before",
                                                      "shell after", "stop")) + " |")
    return 0


def _configuration(args: argparse.Namespace, root: str, resident: str, fsmonitor: str
                   ) -> dict[str, object]:
    """One tree, resident setting and fsmonitor: the medians (ms) of each kind of call."""
    name = f"{os.path.basename(root)}-{fsmonitor}-{resident}"
    home = os.path.join(args.workdir, name)
    shutil.rmtree(home, ignore_errors=True)
    env = common.isolated_env(home, pycache_prefix=os.path.join(args.workdir, "pycache"),
                              extra={"UNDOSTORE_RESIDENT": resident,
                                     "UNDOSTORE_FSMONITOR": fsmonitor})
    os.makedirs(home, exist_ok=True)
    script = common.undostore_commands(args.python)["undostore script"]
    hook, snapshot = [*script, "hook", "--host", "claude-code"], [*script, "snapshot"]
    status = [*script, "status"]
    git = shutil.which("git")
    git_dir = os.path.join(args.workdir, f"git-{os.path.basename(root)}")
    git_status = [git or "git", f"--git-dir={git_dir}", f"--work-tree={root}", "status",
                  "--porcelain"]
    timer = Timer(env, root)
    if git and not os.path.isdir(git_dir):
        subprocess.run([git, "init", "-q", "--bare", git_dir], check=True, env=env)
        subprocess.run([git, f"--git-dir={git_dir}", "config", "core.bare", "false"],
                       check=True, env=env)
        subprocess.run([git, f"--git-dir={git_dir}", f"--work-tree={root}", "add", "-A"],
                       check=True, env=env, cwd=root)
    files = _files(root, CALLS_PER_TURN * args.rounds)
    footer = _event(root, "StatusLine")
    try:
        timer.run("warm-up", snapshot)                 # the first snapshot, not timed below
        _turn(timer, hook, root, files, 0)             # starts the resident process, if on
        timer.times.clear()
        for turn in range(1, args.rounds + 1):
            _turn(timer, hook, root, files, turn)
            for _ in range(3):
                timer.run("python -c pass", [args.python, "-c", "pass"])
                timer.run("walk floor", [args.python, "-c", LSTAT_FLOOR, root])
                timer.run("status", status, footer)
                timer.run("no-change snapshot", snapshot)
                if git:
                    timer.run("git status", git_status)
    finally:
        _stop_resident(home)
    print(f"{name}: {root} ({common.file_system(root)}); load {common.load_average()}",
          file=sys.stderr)
    medians: dict[str, object] = {kind: timer.median_ms(kind) for kind in timer.times}
    medians.setdefault("git status", float("nan"))
    return {**medians, "tree": os.path.basename(root), "resident": resident,
            "fsmonitor": fsmonitor}


def _stop_resident(home: str) -> None:
    """End the resident process a configuration's home started (its state file names it)."""
    try:
        with open(os.path.join(home, ".undostore", "run", "resident.json"),
                  encoding="utf-8") as f:
            pid = int(json.load(f)["pid"])
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            if b"resident.serve" in f.read():
                os.kill(pid, signal.SIGTERM)
    except (OSError, ValueError, KeyError):
        pass


if __name__ == "__main__":
    sys.exit(main())
