"""What each tool call adds to a turn: turns of 20 calls (15 file tools, 5 shells) sent through
the real hook process as Claude Code sends them, with the floors timed in the same run.

    python benchmarks/gen_tree.py tree /tmp/bt/t --files 20000
    python benchmarks/bench_tool_calls.py --root /tmp/bt/t --workdir /tmp/bt/w --rounds 5
    python benchmarks/bench_tool_calls.py ... --resident on          # through the resident process
    python benchmarks/bench_tool_calls.py ... --fsmonitor watchman   # watchman answers the walks

Each round is one turn: a prompt (`UserPromptSubmit`), then 20 calls, each a `PreToolUse`, its
change and a `PostToolUse` (every fourth a shell, `Bash`, whose command appends a line to a file;
the others an `Edit` of one file, which appends a line to it), then `Stop`. Every hook process is
timed from spawn to reap. Between turns, interleaved so the machine's load falls on all alike:
`python -c pass` (the interpreter's start, the floor of any hook), `undostore snapshot` with
nothing changed (a no-change snapshot in its own process) and git's `status` over the tree (a
private git folder, its index made once). The table gives medians per kind of event and the
ratios the targets name (a file tool's before event against a no-change snapshot; a shell call's
two events against one).

`--python` names the interpreter whose console script is timed (a regular install, as users have
it; the default is this one). Bytecode is kept in the work folder, as an installed package has it.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence

import common

CALLS_PER_TURN = 20
SHELL_EVERY = 4          # every fourth call a shell: 15 file tools and 5 shells per turn


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
    parser.add_argument("--root", required=True, help="the tree (gen_tree.py, npm_tree.py)")
    parser.add_argument("--workdir", required=True, help="home, bytecode and git's folder")
    parser.add_argument("--rounds", type=int, default=5, help="turns of 20 calls")
    parser.add_argument("--python", default=sys.executable)
    parser.add_argument("--resident", choices=("on", "off"), default="off")
    parser.add_argument("--fsmonitor", choices=("off", "watchman"), default="off")
    args = parser.parse_args(argv)
    root = os.path.abspath(args.root)
    os.makedirs(args.workdir, exist_ok=True)
    home = os.path.join(args.workdir, "home")
    env = common.isolated_env(home, pycache_prefix=os.path.join(args.workdir, "pycache"),
                              extra={"UNDOSTORE_RESIDENT": args.resident,
                                     "UNDOSTORE_FSMONITOR": args.fsmonitor})
    os.makedirs(home, exist_ok=True)
    script = common.undostore_commands(args.python)["undostore script"]
    hook, snapshot = [*script, "hook", "--host", "claude-code"], [*script, "snapshot"]
    git = shutil.which("git")
    git_dir = os.path.join(args.workdir, "git")
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
    timer.run("warm-up", snapshot)                 # the first snapshot, not timed below
    _turn(timer, hook, root, files, 0)             # starts the resident process, if on
    timer.times.clear()
    for turn in range(1, args.rounds + 1):
        _turn(timer, hook, root, files, turn)
        for _ in range(3):
            timer.run("python -c pass", [args.python, "-c", "pass"])
            timer.run("no-change snapshot", snapshot)
            if git:
                timer.run("git status", git_status)
    print(f"{args.rounds} turns of {CALLS_PER_TURN} calls; {root} ({common.file_system(root)}); "
          f"resident {args.resident}, fsmonitor {args.fsmonitor}; load {common.load_average()}")
    print("\n| event | median |\n|---|---:|")
    for kind in timer.times:
        print(f"| {kind} | {timer.median_ms(kind):.1f} ms |")
    floor = timer.median_ms("no-change snapshot")
    print(f"\nfile tool's before event / no-change snapshot: "
          f"{timer.median_ms('file before') / floor:.2f}x (target <= 0.3x on the npm tree)")
    print(f"file tool's two events: {timer.median_ms('file call (both)'):.1f} ms "
          f"(target <= 60 ms own process, <= 30 ms resident)")
    print(f"shell call's two events / no-change snapshot: "
          f"{timer.median_ms('shell call (both)') / floor:.2f}x (target <= 2.2x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
