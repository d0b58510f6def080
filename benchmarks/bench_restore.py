"""Restore speed against git, in the same run, on the same trees.

    python benchmarks/bench_restore.py                 # the three cases, 5 repeats
    python benchmarks/bench_restore.py --repeats 3 --workdir /tmp/br --keep
    python benchmarks/bench_restore.py --cases npm-undo --workdir /tmp/br --keep

Three cases (targets of issue 11: modified <= 1.25x git, new <= 1.0x, npm-undo <= 1.0x with
watchman):

- modified: a 20,000-file tree (1,000 folders) in which 2,000 files differ between snapshots A
  and B. undostore restores A, then B, then A, ... (`Workspace.restore` in-process, and the
  `undostore restore ID --yes` process); git does `git read-tree -m -u CUR NEW` between the same
  two trees in a private git dir whose index tracks the same files. Both sides alternate.
- new: the 20,000 files of A restored into an empty folder; git does `git checkout-index -a`
  from an index holding A (the `git read-tree A` that fills the index is not timed).
- npm-undo: a real npm `node_modules` (~75,000 files, npm_tree.py; installed once into a cache
  outside the repository, each side works on its own copy). A session records undo point A, a
  10-file turn follows (7 files modified, 2 created, 1 deleted), then `Workspace.undo` and
  `Workspace.redo` alternate (and the `undostore undo|redo --yes` process every other step);
  git does `git read-tree -m -u` between the same two trees. `--fsmonitor` sets
  UNDOSTORE_FSMONITOR for undostore (watchman, when the library has it: a private daemon
  started for the run and stopped after it, never the user's).

- big-undo: the undo of one turn that changed 2,000 of the 20,000 files (nothing changed
  since), then its redo, alternating, against `git read-tree -m -u` between the same two trees:
  with nothing to merge, an undo is a checkout and should cost what `modified` costs.

- c-project: issue 23's restore, on the 80,000-file C-like tree with its build outputs
  (gen_tree.py): a 2,900-path change (leaf folders holding ~2,000 sources deleted, 500 edited,
  300 added, 20 given the exec bit) taken back and forth, against `git read-tree -m -u`.

`--packs N` gives the store of the modified and new cases N more packs first, as N snapshots
that found something new leave between two gcs (each object lookup may try every pack).

Where the time goes: after the timed runs, `--phase-repeats` more library runs of each case go
through phases.PhaseTimer (the library's functions wrapped for the run; exclusive seconds per
step: safety snapshot, plan, blob verification, journal, write, sync, stat cache, session step).
`--profile` also runs one library restore of each case under cProfile and prints the top lines.

Durability is included on undostore's side: temp files are made durable before they are renamed
(one `syncfs` per batch on Linux), and the restore journal is written and removed with fsyncs.
Every timed step starts after an untimed `sync`, so no step pays for another's dirty pages;
`--after-write MB` then has `dd` write MB more to the same file system, left dirty, right before
each step (a disk a build or a download just wrote to: a `syncfs` would wait for all of it).
git never fsyncs work-tree files (`core.fsync` covers only its own database), so each timed git
step is followed by one `sync -f` of its file system, in its time (`--no-git-syncfs`: git
alone). `--file-systems ext4,xfs,btrfs,tmpfs` runs the cases on each, freshly made by `mkfs` and
loop-mounted (root and the mkfs tools; this machine's root is an ext4 without a journal, which
users rarely have). Peak RSS of the CLI runs and of git's is in the table.
undostore's time also includes the safety snapshot it takes first (a
walk of all 20,000 files), which `git read-tree` does not need because its index already holds
their stat data. The machine is shared: ratios from the same run mean more than absolute times.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import common  # noqa: E402
import gen_tree  # noqa: E402
import npm_tree  # noqa: E402
import watchman_cases  # noqa: E402
from common import fmt_seconds, median  # noqa: E402
from phases import ORDER, PhaseTimer  # noqa: E402

RESULTS_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results")


def _all_files(root: str) -> list[str]:
    out = []
    for folder, dirs, files in os.walk(root):
        dirs.sort()
        out.extend(os.path.join(folder, name) for name in sorted(files))
    return out


def _modify(root: str, count: int, seed: int) -> list[str]:
    """Append a line to `count` files chosen by `seed` (the same files in every copy)."""
    rels = sorted(os.path.relpath(p, root) for p in _all_files(root))
    chosen = random.Random(seed).sample(rels, count)
    for rel in chosen:
        with open(os.path.join(root, rel), "ab") as f:
            f.write(f"# changed for the restore benchmark ({rel})\n".encode())
    return chosen


class Git:
    """git with a private git dir and index over one work tree."""

    # Each timed git step is followed by one `sync -f` of the work tree's file system (in its
    # time and in its runs' memory figure, the larger of the two), so both sides pay the same
    # durability: undostore makes what it restores durable before it reports done.
    syncfs = True

    def __init__(self, git_dir: str, work_tree: str, env: dict[str, str],
                 index: str | None = None) -> None:
        self.git_dir, self.work_tree = git_dir, work_tree
        self.env = {**env, "GIT_DIR": git_dir, "GIT_WORK_TREE": work_tree,
                    "GIT_INDEX_FILE": index or os.path.join(git_dir, "index")}

    @staticmethod
    def init(git_dir: str, env: dict[str, str]) -> None:
        common.run_process(["git", "init", "-q", "--bare", git_dir], env=env).check()
        for key, value in (("core.bare", "false"), ("core.autocrlf", "false"),
                           ("core.filemode", "true"), ("core.symlinks", "true")):
            common.run_process(["git", "--git-dir", git_dir, "config", key, value],
                               env=env).check()

    @classmethod
    def fresh(cls, git_dir: str, work_tree: str, env: dict[str, str],
              index: str | None = None) -> Git:
        """A new repository at `git_dir` (an old one there removed) over `work_tree`."""
        Git.init(_fresh(git_dir), env)
        return cls(git_dir, work_tree, env, index=index)

    def run(self, *args: str) -> common.ProcessRun:
        return common.run_process(["git", *args], cwd=self.work_tree, env=self.env).check()

    def timed(self, *args: str, peaks: list[int] | None = None) -> float:
        """Seconds of `git args` (plus the `sync -f` that makes it durable); its peak RSS
        goes to `peaks`."""
        done = common.run_process(["git", *args], cwd=self.work_tree, env=self.env,
                                  measure_memory=True).check()
        seconds = done.seconds
        if self.syncfs:
            seconds += common.run_process(["sync", "-f", self.work_tree]).check().seconds
        if peaks is not None and done.peak_rss:
            peaks.append(done.peak_rss)
        return seconds

    def write_tree(self) -> str:
        """`git add -A && git write-tree`: the tree id of the work tree as it is."""
        self.run("add", "-A")
        return self.run("write-tree").stdout.strip()


def _fresh(path: str) -> str:
    """`path`, with whatever an earlier run left there removed."""
    if os.path.exists(path):
        shutil.rmtree(path)
    return path


def _check_ids(ours: tuple[str, str], gits: tuple[str, str]) -> None:
    """The set-up's two snapshots must be git's two trees, or the comparison is meaningless."""
    if ours != gits:
        raise RuntimeError(f"snapshot ids differ from git's: {'/'.join(ours)} vs "
                           f"{'/'.join(gits)}")


def _add_packs(ws: object, root: str, count: int) -> None:
    """`count` more packs in the store, as `count` snapshots that found something new leave
    between two gcs: a file appears (its snapshot writes a pack) and goes again (the last
    snapshot finds the files as they were: nothing new)."""
    path = os.path.join(root, "bench-pack-filler.txt")
    for k in range(count):
        with open(path, "w", encoding="utf-8") as f:
            f.write(f"filler {k}\n")
        ws.snapshot()  # type: ignore[attr-defined]
        os.unlink(path)
    ws.snapshot()  # type: ignore[attr-defined]


# `--after-write MB`: each timed step starts right after another program wrote this many MB
# to the same file system and left them dirty (no fsync), as a build or a download does.
AFTER_WRITE = {"mb": 0, "folder": ""}


def _settle() -> None:
    """Before each timed step: every dirty page written back (common.settle), then, with
    `--after-write`, another program's fresh writes left dirty for the step to meet."""
    if not AFTER_WRITE["mb"]:
        common.settle()
        return
    other = os.path.join(AFTER_WRITE["folder"], "another-program.dat")
    with contextlib.suppress(FileNotFoundError):
        os.unlink(other)   # the last step's: its pages are dropped, never written
    common.settle()
    common.write_like_another_program(other, AFTER_WRITE["mb"])


# How the CLI is started: `--python` picks the interpreter whose installed `undostore` script
# runs (a non-editable install, as users have: an editable one imports its finder, ~17 ms).
CLI_COMMAND = [sys.executable, "-m", "undostore"]


def _undostore_cli(root: str, store: str, target: str, env: dict[str, str],
                   peaks: list[int] | None = None) -> common.ProcessRun:
    argv = [*CLI_COMMAND, "--root", root, "--store", store, "restore", target, "--yes", "--json"]
    done = common.run_process(argv, env=env, measure_memory=True).check()
    if peaks is not None and done.peak_rss:
        peaks.append(done.peak_rss)
    return done


def _rebind(root: str, store: str, env: dict[str, str]) -> None:
    """Point `store` at `root` (a store refuses a root it was not made for)."""
    common.run_process([*CLI_COMMAND, "--root", root, "--store", store, "rebind"],
                       env=env).check()


def _phase_runs(step: Callable[[], object], repeats: int, label: str,
                profile: bool) -> dict[str, object]:
    """`repeats` library restores (`step`) under PhaseTimer: the median seconds of each step;
    with `profile`, one more under cProfile (top lines printed, the file kept in results/)."""
    samples: list[dict[str, float]] = []
    missing: list[str] = []
    for _ in range(repeats):
        _settle()
        with PhaseTimer() as timer:
            started = time.perf_counter()
            step()
            whole = time.perf_counter() - started
        samples.append({**timer.breakdown(whole), "whole": whole})
        missing = timer.missing
    out: dict[str, object] = {
        "steps": {k: median([s[k] for s in samples]) for k in samples[0]} if samples else {},
        "samples": samples, "missing": missing}
    if profile:
        import cProfile

        os.makedirs(RESULTS_DIR, exist_ok=True)
        path = os.path.join(RESULTS_DIR, f"restore-{label}-{time.strftime('%Y%m%d-%H%M%S')}.prof")
        _settle()
        profiler = cProfile.Profile()
        profiler.runcall(step)
        profiler.dump_stats(path)
        here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        text = common.pstats_text(path, "cumulative", 30, {here + os.sep: "", sys.prefix: "py"})
        print(f"\n### cProfile, one library restore: {label} ({path})\n\n```\n{text}\n```")
        out["profile"] = path
    return out


@dataclass
class _BackAndForth:
    """Restores between two snapshots, alternating, each timed against git's `read-tree -m -u`
    between the same two trees (the CLI process every other step: it pays Python's start-up)."""

    lib: list[float] = field(default_factory=list)
    cli: list[float] = field(default_factory=list)
    git: list[float] = field(default_factory=list)
    peaks: dict[str, list[int]] = field(default_factory=lambda: {"cli": [], "git": []})
    now: str = ""
    phases: dict[str, object] = field(default_factory=dict)


def _back_and_forth(ws: object, git: Git, root: str, store: str, ids: tuple[str, str],
                    repeats: int, env: dict[str, str],
                    check: Callable[[object], None] = lambda result: None) -> _BackAndForth:
    snap_a, snap_b = ids
    runs = _BackAndForth(now=snap_b)
    # The CLI runs every other step, alternating A and B: an even number of CLI runs takes each
    # direction equally often (one direction may create 2,000 files and the other delete them;
    # with 5 runs, 3 of one kind set the median).
    for i in range(2 * (repeats + repeats % 2)):
        new = snap_a if runs.now == snap_b else snap_b
        _settle()
        started = time.perf_counter()
        result = ws.restore(new)  # type: ignore[attr-defined]
        runs.lib.append(time.perf_counter() - started)
        check(result)
        _settle()
        runs.git.append(git.timed("read-tree", "-m", "-u", runs.now, new,
                                  peaks=runs.peaks["git"]))
        runs.now = new
        if i % 2 == 1:
            back = snap_a if runs.now == snap_b else snap_b
            _settle()
            runs.cli.append(_undostore_cli(root, store, back, env, runs.peaks["cli"]).seconds)
            _settle()
            runs.git.append(git.timed("read-tree", "-m", "-u", runs.now, back,
                                      peaks=runs.peaks["git"]))
            runs.now = back
    return runs


@dataclass
class _Sides:
    """undostore's copy of a tree and git's, both at snapshot A, then changed alike: B."""

    ws: object
    git: Git
    root: str
    store: str
    ids: tuple[str, str]
    changed: int


def _two_sides(work: str, base: str, prefix: str, env: dict[str, str],
               change: Callable[[str], int]) -> _Sides:
    """Copies of `base` for undostore (`<prefix>u`) and git (`<prefix>g`), snapshotted, changed
    by `change` (the same change on each: it returns how many paths), snapshotted again; the
    two ids checked against git's."""
    from undostore import Workspace

    ours_root, git_root = os.path.join(work, prefix + "u"), os.path.join(work, prefix + "g")
    for copy in (ours_root, git_root):
        _fresh(copy)
        shutil.copytree(base, copy, symlinks=True)
    store = _fresh(os.path.join(work, prefix + "ustore"))
    ws = Workspace(ours_root, store)
    snap_a = ws.snapshot().id
    git = Git.fresh(os.path.join(work, prefix + "g.git"), git_root, env)
    git_a = git.write_tree()
    changed = change(ours_root)
    change(git_root)
    time.sleep(0.1)  # let the stat data age past the racy window for both tools
    snap_b = ws.snapshot().id
    _check_ids((snap_a, snap_b), (git_a, git.write_tree()))
    return _Sides(ws, git, ours_root, store, (snap_a, snap_b), changed)


def bench_modified(work: str, files: int, folders: int, modified: int, repeats: int,
                   env: dict[str, str], phase_repeats: int = 3,
                   profile: bool = False, packs: int = 0) -> dict[str, object]:
    base = os.path.join(work, "base")
    gen_tree.ensure("tree", base, files=files, folders=folders)
    sides = _two_sides(work, base, "", env, lambda root: len(_modify(root, modified, seed=7)))
    ws, git, ours_root, store = sides.ws, sides.git, sides.root, sides.store
    snap_a, snap_b = sides.ids
    _add_packs(ws, ours_root, packs)  # (and a warm stat cache, as after any earlier snapshot)

    def check(result: object) -> None:
        assert len(result.modified) == modified, (len(result.modified), result.warnings)  # type: ignore[attr-defined]

    runs = _back_and_forth(ws, git, ours_root, store, (snap_a, snap_b), repeats, env, check)
    lib, cli, git_times, peaks = runs.lib, runs.cli, runs.git, runs.peaks
    state = {"now": runs.now}

    def one_restore() -> None:
        new = snap_a if state["now"] == snap_b else snap_b
        result = ws.restore(new)
        assert len(result.modified) == modified, (len(result.modified), result.warnings)
        state["now"] = new

    phases = _phase_runs(one_restore, phase_repeats, "modified", profile)
    if ws.snapshot().id != state["now"]:
        raise RuntimeError("after the restores, the files do not snapshot to the target")
    ws.close()
    return {**_row("modified", f"{modified:,} of {files:,} files", lib, cli, git_times,
                   "git read-tree -m -u", peaks), "phases": phases}


def _c_change(root: str, seed: int) -> int:
    """Issue 23's 2,900-file change on the C-like tree: whole folders deleted until ~2,000 of
    their sources are gone, 500 sources edited, 300 added, 20 given the exec bit. Chosen from
    sorted listings, so the same seed makes the same change in any copy. Paths changed."""
    rng = random.Random(seed)
    folders = sorted(d for d, _, _ in os.walk(root) if d != root
                     and not os.path.relpath(d, root).startswith("include"))
    sources = {d: sorted(f for f in os.listdir(d) if f.endswith((".c", ".h")))
               for d in folders}
    gone = 0
    doomed: list[str] = []
    for folder in rng.sample(folders, len(folders)):
        if gone >= 2_000:
            break
        if any(os.path.isdir(os.path.join(folder, n)) for n in os.listdir(folder)):
            continue   # leaves only: a deleted folder takes no other chosen folder with it
        doomed.append(folder)
        gone += len(sources[folder])
    for folder in doomed:
        shutil.rmtree(folder)
    alive = [os.path.join(d, f) for d in folders if d not in doomed for f in sources[d]]
    chosen = rng.sample(alive, 520)
    for path in chosen[:500]:
        with open(path, "ab") as f:
            f.write(b"/* edited */\n")
    for path in chosen[500:]:
        os.chmod(path, 0o755)
    homes = [d for d in folders if d not in doomed]
    for i in range(300):
        with open(os.path.join(rng.choice(homes), f"added_{i:03d}.c"), "wb") as f:
            f.write(b"int added_%d;\n" % i)
    return gone + 820


def bench_c_project(work: str, repeats: int, env: dict[str, str], phase_repeats: int = 3,
                    profile: bool = False) -> dict[str, object]:
    """Issue 23's restore: the 80k-file C-like tree with its build outputs, a 2,900-file change
    taken back and forth, against `read-tree -m -u` (both walk: undostore's safety snapshot
    and git's index refresh)."""
    base = os.path.join(work, "c-base")
    gen_tree.ensure("c-project", base, files=80_000, folders=5_000, gitignores=300)
    sides = _two_sides(work, base, "c", env, lambda root: _c_change(root, seed=23))
    ws, git, ours_root, store = sides.ws, sides.git, sides.root, sides.store
    snap_a, snap_b = sides.ids
    changed = sides.changed
    runs = _back_and_forth(ws, git, ours_root, store, (snap_a, snap_b), repeats, env)
    lib, cli, git_times, peaks = runs.lib, runs.cli, runs.git, runs.peaks
    state = {"now": runs.now}

    def one_restore() -> None:
        new = snap_a if state["now"] == snap_b else snap_b
        ws.restore(new)
        state["now"] = new

    phases = _phase_runs(one_restore, phase_repeats, "c-project", profile)
    if ws.snapshot().id != state["now"]:
        raise RuntimeError("after the restores, the files do not snapshot to the target")
    ws.close()
    return {**_row("c-project", f"{changed:,}-path change of the 80k-file C tree", lib, cli,
                   git_times, "git read-tree -m -u", peaks), "phases": phases}


def bench_new(work: str, files: int, folders: int, repeats: int,
              env: dict[str, str], phase_repeats: int = 3,
              profile: bool = False, packs: int = 0) -> dict[str, object]:
    from undostore import Workspace

    base = os.path.join(work, "base")
    gen_tree.ensure("tree", base, files=files, folders=folders)
    store = _fresh(os.path.join(work, "ustore-new"))
    with Workspace(base, store) as source:
        snap = source.snapshot().id
        _add_packs(source, base, packs)
    git_dir = os.path.join(work, "gnew.git")
    filler = Git.fresh(git_dir, base, env, index=os.path.join(work, "gnew.index"))
    if filler.write_tree() != snap:
        raise RuntimeError("snapshot id differs from git's tree id")
    lib, cli, git_times = [], [], []
    peaks: dict[str, list[int]] = {"cli": [], "git": []}
    made: list[str] = []
    try:
        for i in range(repeats):
            # Fresh folders each time: deleting 20,000 files between steps would keep the disk
            # busy while the next step is timed. They are all deleted at the end.
            ours_root = os.path.join(work, f"unew{i}")
            git_root = os.path.join(work, f"gnew{i}")
            for root in (ours_root, git_root):
                if os.path.exists(root):
                    shutil.rmtree(root)
                os.mkdir(root)
                made.append(root)
            git = Git(git_dir, git_root, env, index=os.path.join(work, "gnew.index"))
            git.run("read-tree", snap)
            _settle()
            git_times.append(git.timed("checkout-index", "-a", peaks=peaks["git"]))
            _settle()
            if i % 2 == 0:
                with Workspace(ours_root, store, rebind=True) as ws:
                    started = time.perf_counter()
                    result = ws.restore(snap)
                    lib.append(time.perf_counter() - started)
                    assert len(result.created) == files, len(result.created)
                    if i == 0 and ws.snapshot().id != snap:
                        raise RuntimeError("the restored files do not snapshot to the target")
            else:
                _rebind(ours_root, store, env)  # the store was made for `base` (not timed)
                _settle()
                cli.append(_undostore_cli(ours_root, store, snap, env, peaks["cli"]).seconds)
        counter = iter(range(repeats, repeats + phase_repeats + 1))

        def one_restore() -> None:
            root = os.path.join(work, f"unew{next(counter)}")
            if os.path.exists(root):
                shutil.rmtree(root)
            os.mkdir(root)
            made.append(root)
            with Workspace(root, store, rebind=True) as ws:
                assert len(ws.restore(snap).created) == files

        phases = _phase_runs(one_restore, phase_repeats, "new", profile)
    finally:
        for root in made:
            shutil.rmtree(root, ignore_errors=True)
    return {**_row("new", f"{files:,} files into an empty folder", lib, cli, git_times,
                   "git checkout-index -a", peaks), "phases": phases}


def _turn(root: str, seed: int, modified: int = 7, created: int = 2, deleted: int = 1
          ) -> list[str]:
    """An agent's turn: `modified` files get a line appended, `created` new files appear next
    to others, `deleted` files go (chosen by `seed`: the same paths in every copy). Edits are
    written to a new file renamed over the old one, never in place, so a copy sharing blocks
    with the cache (reflink) or an earlier run's file is never changed through."""
    rels = sorted(os.path.relpath(p, root) for p in _all_files(root)
                  if not os.path.islink(p))
    chosen = random.Random(seed).sample(rels, modified + created + deleted)
    touched = []
    for rel in chosen[:modified]:
        path = os.path.join(root, rel)
        with open(path, "rb") as f:
            data = f.read()
        temp = path + ".bench-tmp"
        with open(temp, "wb") as f:
            f.write(data + f"\n// edited by the agent's turn ({rel})\n".encode())
        os.chmod(temp, os.stat(path).st_mode & 0o7777)
        os.replace(temp, path)
        touched.append(rel)
    for i, rel in enumerate(chosen[modified:modified + created]):
        new = os.path.join(os.path.dirname(rel), f"agent-new-{i}.js")
        with open(os.path.join(root, new), "w", encoding="utf-8") as f:
            f.write(f"// a file the agent's turn created next to {rel}\nexport default {i};\n")
        touched.append(new)
    for rel in chosen[modified + created:]:
        os.unlink(os.path.join(root, rel))
        touched.append(rel)
    return touched


def bench_npm_undo(work: str, repeats: int, env: dict[str, str], phase_repeats: int = 3,
                   profile: bool = False) -> dict[str, object]:

    record = npm_tree.ensure(log=lambda m: print(m, file=sys.stderr))
    ours_root, git_root = os.path.join(work, "npm-u"), os.path.join(work, "npm-g")
    for copy in (ours_root, git_root):
        npm_tree.copy_tree(copy)
        npm_tree.forget_copy(copy)  # changed below; put back to A and marked again at the end
    turn = _session_turn(work, "npm", ours_root, git_root, env,
                         lambda root: _turn(root, seed=11))
    runs = _undo_and_redo(turn, repeats, env, phase_repeats, "npm-undo", profile)
    for copy in (ours_root, git_root):
        npm_tree.mark_copied(copy)  # both back at A: the cache's bytes, reusable next run
    what = (f"undo of a {len(turn.touched)}-file turn, npm tree of {record['files']:,} files "
            f"(fsmonitor {env.get('UNDOSTORE_FSMONITOR', 'default')})")
    return {**_row("npm-undo", what, runs.lib, runs.cli, runs.git, "git read-tree -m -u"),
            "phases": runs.phases, "tree": record}


@dataclass
class _SessionTurn:
    """undostore's copy of a tree at a session's undo point A, git's copy at A too, both then
    changed alike by one turn (B, the host's after-turn snapshot: no undo point)."""

    ws: object
    git: Git
    root: str
    store: str
    session: str
    ids: tuple[str, str]
    touched: list[str]


def _session_turn(work: str, prefix: str, ours_root: str, git_root: str, env: dict[str, str],
                  turn: Callable[[str], list[str]]) -> _SessionTurn:
    """The copies (already made) recorded at A, `turn` applied to each (it returns the paths
    it touched: the same in both), recorded at B; both ids checked against git's."""
    from undostore import Workspace

    store = _fresh(os.path.join(work, f"ustore-{prefix}"))
    session = "bench"
    ws = Workspace(ours_root, store)
    snap_a = ws.snapshot(session=session, label="before the turn").id
    git = Git.fresh(os.path.join(work, f"{prefix}-g.git"), git_root, env)
    git_a = git.write_tree()
    touched = turn(ours_root)
    if turn(git_root) != touched:
        raise RuntimeError("the two copies differ: the turn touched different paths")
    time.sleep(0.1)
    snap_b = ws.snapshot().id   # what a host's after-turn snapshot would see (no undo point)
    _check_ids((snap_a, snap_b), (git_a, git.write_tree()))
    return _SessionTurn(ws, git, ours_root, store, session, (snap_a, snap_b), touched)


def _undo_and_redo(turn: _SessionTurn, repeats: int, env: dict[str, str], phase_repeats: int,
                   label: str, profile: bool) -> _BackAndForth:
    """`Workspace.undo` and `.redo` of the session's last turn (A -> B), alternating, each
    timed against git's `read-tree -m -u` between the same two trees (the `undostore undo|redo
    --yes` process every other step); left at A on both sides."""
    ws, git, session, root, store = turn.ws, turn.git, turn.session, turn.root, turn.store
    snap_a, snap_b = turn.ids
    changed = len(turn.touched)
    runs = _BackAndForth(now=snap_b)
    state = {"now": snap_b, "git": snap_b}

    def step_lib() -> None:
        undo = state["now"] == snap_b
        result = ws.undo(session) if undo else ws.redo(session)  # type: ignore[attr-defined]
        done = len(result.created) + len(result.modified) + len(result.deleted)
        assert done == changed, (done, result.warnings)
        state["now"] = snap_a if undo else snap_b

    def step_git() -> None:
        new = snap_a if state["git"] == snap_b else snap_b
        runs.git.append(git.timed("read-tree", "-m", "-u", state["git"], new))
        state["git"] = new

    for i in range(repeats * 2):
        _settle()
        started = time.perf_counter()
        step_lib()
        runs.lib.append(time.perf_counter() - started)
        _settle()
        step_git()
        if i % 2 == 1:  # the CLI process, every other step
            verb = "undo" if state["now"] == snap_b else "redo"
            _settle()
            runs.cli.append(common.run_process(
                [*CLI_COMMAND, "--root", root, "--store", store,
                 verb, "--session", session, "--yes", "--json"], env=env).check().seconds)
            state["now"] = snap_a if verb == "undo" else snap_b
            _settle()
            step_git()
    runs.phases = _phase_runs(step_lib, phase_repeats, label, profile)
    if ws.snapshot().id != state["now"]:  # type: ignore[attr-defined]
        raise RuntimeError("after the undos, the files do not snapshot to the target")
    if state["now"] == snap_b:
        ws.undo(session)  # type: ignore[attr-defined]
    if state["git"] == snap_b:
        git.run("read-tree", "-m", "-u", snap_b, snap_a)
    ws.close()  # type: ignore[attr-defined]
    return runs


def bench_big_undo(work: str, files: int, folders: int, modified: int, repeats: int,
                   env: dict[str, str], phase_repeats: int = 3,
                   profile: bool = False) -> dict[str, object]:
    """The undo of one big turn (`modified` of `files` files, nothing changed since) against
    `git read-tree -m -u` of the same change: with no later change to merge, it is a
    checkout, and should cost what the `modified` case's restore does."""

    base = os.path.join(work, "base")
    gen_tree.ensure("tree", base, files=files, folders=folders)
    ours_root, git_root = os.path.join(work, "bigu"), os.path.join(work, "bigg")
    for copy in (ours_root, git_root):
        _fresh(copy)
        shutil.copytree(base, copy, symlinks=True)
    turn = _session_turn(work, "big", ours_root, git_root, env,
                         lambda root: _modify(root, modified, seed=7))
    runs = _undo_and_redo(turn, repeats, env, phase_repeats, "big-undo", profile)
    return {**_row("big-undo", f"undo of a turn that changed {modified:,} of {files:,} files",
                   runs.lib, runs.cli, runs.git, "git read-tree -m -u"),
            "phases": runs.phases}


def _row(case: str, what: str, lib: list[float], cli: list[float], git: list[float],
         git_command: str, peaks: dict[str, list[int]] | None = None) -> dict[str, object]:
    lib_m, cli_m, git_m = median(lib), median(cli), median(git)
    row: dict[str, object] = {
        "case": case, "what": what, "git_command": git_command + (
            " + sync -f" if Git.syncfs else ""),
        "undostore_library_s": lib_m, "undostore_cli_s": cli_m, "git_s": git_m,
        "ratio_library": lib_m / git_m, "ratio_cli": cli_m / git_m,
        "samples": {"library": lib, "cli": cli, "git": git}}
    if peaks and peaks["cli"] and peaks["git"]:
        row["peak_cli_mb"] = max(peaks["cli"]) / 1e6
        row["peak_git_mb"] = max(peaks["git"]) / 1e6
    return row


def _print_phases(rows: list[dict[str, object]]) -> None:
    """Where a library restore's time goes, per case (median seconds of each step)."""
    timed = [row for row in rows if isinstance(row.get("phases"), dict) and
             row["phases"].get("steps")]
    if not timed:
        return
    print("\nWhere a library restore's time goes (median s per step, exclusive; "
          "phases.PhaseTimer):\n")
    print("| case | " + " | ".join(ORDER) + " | whole |")
    print("|---|" + "---:|" * (len(ORDER) + 1))
    for row in timed:
        steps = row["phases"]["steps"]
        cells = [fmt_seconds(steps.get(step)) for step in (*ORDER, "whole")]
        where = str(row.get("file_system", "")).split(" on ")[0]
        print(f"| {row['case']} ({where}) | " + " | ".join(cells) + " |")
    missing = sorted({m for row in timed for m in row["phases"].get("missing", [])})
    if missing:
        print(f"\n(not in this library, not timed: {', '.join(missing)})")


FILE_SYSTEMS = ("ext4", "xfs", "btrfs", "tmpfs")


@contextlib.contextmanager
def _mounted(kind: str, work: str, size: str = "10G") -> Iterator[str]:
    """A fresh file system of `kind` as `mkfs` makes it, loop-mounted from an image file in
    `work` (tmpfs: mounted directly); its mount point. Needs root and the mkfs tools."""
    point = os.path.join(work, f"fs-{kind}")
    os.makedirs(point, exist_ok=True)
    image = os.path.join(work, f"fs-{kind}.img")
    if kind == "tmpfs":
        common.run_process(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs",
                            point]).check()
    else:
        with open(image, "wb") as f:
            f.truncate(int(size.rstrip("G")) << 30)
        force = {"ext4": "-F", "xfs": "-f", "btrfs": "-f"}[kind]
        common.run_process([f"mkfs.{kind}", "-q", force, image]).check()
        common.run_process(["mount", "-o", "loop", image, point]).check()
    try:
        yield point
    finally:
        common.run_process(["umount", point]).check()
        if os.path.exists(image):
            os.unlink(image)


def _cases(work: str, args: argparse.Namespace, env: dict[str, str]) -> list[dict[str, object]]:
    rows = []
    cases = args.cases.split(",")
    AFTER_WRITE["folder"] = work   # on the file system the cases run on
    more = {"phase_repeats": args.phase_repeats, "profile": args.profile}
    if "modified" in cases:
        rows.append(bench_modified(work, args.files, args.folders, args.modified,
                                   args.repeats, env, packs=args.packs, **more))
    if "new" in cases:
        rows.append(bench_new(work, args.files, args.folders, args.repeats, env,
                              packs=args.packs, **more))
    if "npm-undo" in cases:
        rows.append(bench_npm_undo(work, args.repeats, env, **more))
    if "big-undo" in cases:
        rows.append(bench_big_undo(work, args.files, args.folders, args.modified,
                                   args.repeats, env, **more))
    if "c-project" in cases:
        rows.append(bench_c_project(work, args.repeats, env, **more))
    for row in rows:
        row["file_system"] = common.file_system(work)
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--files", type=int, default=20_000)
    parser.add_argument("--folders", type=int, default=1_000)
    parser.add_argument("--modified", type=int, default=2_000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--cases", default="modified,new,npm-undo",
                        help="comma-separated: modified, new, npm-undo, big-undo, c-project")
    parser.add_argument("--phase-repeats", type=int, default=3,
                        help="library runs per case timed step by step (0: none)")
    parser.add_argument("--profile", action="store_true",
                        help="one more library run per case under cProfile")
    parser.add_argument("--fsmonitor", choices=("auto", "watchman", "off"), default="off",
                        help="UNDOSTORE_FSMONITOR for undostore (default off: a daemon another "
                             "program started would otherwise decide whether the walk runs)")
    parser.add_argument("--packs", type=int, default=0,
                        help="modified and new: this many more packs in the store, as after "
                             "that many snapshots between two gcs (lookups try each pack)")
    parser.add_argument("--file-systems", default="",
                        help=f"comma-separated, of {', '.join(FILE_SYSTEMS)}: run the cases on "
                             "each, freshly made and loop-mounted (root, mkfs tools)")
    parser.add_argument("--no-git-syncfs", action="store_true",
                        help="time git alone, without the `sync -f` after each of its steps")
    parser.add_argument("--after-write", type=int, default=0, metavar="MB",
                        help="start each timed step right after another program wrote this "
                             "many MB to the same file system, not yet written back (`dd`, "
                             "no fsync): what a durable restore meets on a busy disk")
    parser.add_argument("--python", default=sys.executable,
                        help="the CLI is the `undostore` script installed beside this "
                             "interpreter (default: this one's, else `python -m undostore`)")
    parser.add_argument("--note", default="", help="printed with the results")
    parser.add_argument("--workdir", help="reuse this folder (trees are kept for the next run)")
    parser.add_argument("--keep", action="store_true", help="keep the work folder")
    args = parser.parse_args(argv)
    CLI_COMMAND[:] = next(iter(common.undostore_commands(args.python).values()))
    if shutil.which("git") is None:
        print("bench_restore: git is needed as the reference", file=sys.stderr)
        return 1
    work = args.workdir or tempfile.mkdtemp(prefix="undostore-bench-restore-")
    os.makedirs(work, exist_ok=True)
    home = os.path.join(work, "home")
    os.makedirs(home, exist_ok=True)
    env = common.isolated_env(
        home, extra={"UNDOSTORE_FSMONITOR": args.fsmonitor} if args.fsmonitor else None)
    # With watchman, a private daemon of the run's own (never the user's, and none left
    # running after it).
    daemon = None
    if args.fsmonitor != "off" and watchman_cases.available() is None:
        daemon = watchman_cases.PrivateWatchman(tempfile.mkdtemp(prefix="usbw-"))
        daemon.start()
        env["WATCHMAN_SOCK"] = daemon.sock
    # The library runs in this process and the CLI in children: both must see the same
    # environment. The ignore fingerprint kept with watchman's clock names the git config files
    # the environment selects (GIT_CONFIG_NOSYSTEM drops /etc/gitconfig, XDG_CONFIG_HOME moves
    # the global ones), so a step made under another environment than the one before it finds
    # the fingerprint changed and walks the whole tree: the CLI column measured that walk.
    os.environ.clear()
    os.environ.update(env)
    Git.syncfs = not args.no_git_syncfs
    AFTER_WRITE["mb"] = args.after_write
    rows = []
    load_before = common.load_average()
    try:
        kinds = [k for k in args.file_systems.split(",") if k]
        for kind in kinds:
            with _mounted(kind, work) as point:
                rows += _cases(point, args, env)
        if not kinds:
            rows = _cases(work, args, env)
    finally:
        if daemon is not None:
            daemon.stop()
            shutil.rmtree(daemon.folder, ignore_errors=True)
        if not args.keep and not args.workdir:
            shutil.rmtree(work, ignore_errors=True)
    print(f"restore benchmark: {args.files:,} files in {args.folders:,} folders, "
          f"{args.repeats} repeats, load average {load_before} -> {common.load_average()}, "
          f"{common.tool_version(['git', '--version'])}, Python {sys.version.split()[0]}, "
          f"{common.file_system(work)}, CLI `{' '.join(CLI_COMMAND)}`"
          + (f", {args.packs} more packs" if args.packs else "")
          + (f", each step right after another program wrote {args.after_write} MB"
             if args.after_write else ""))
    print("\n| file system | case | undostore (library) | undostore (CLI process) | git | "
          "git command | library / git | CLI / git | peak RSS CLI / git |")
    print("|---|---|---|---|---|---|---|---|---|")
    for row in rows:
        memory = (f"{row['peak_cli_mb']:.0f} / {row['peak_git_mb']:.0f} MB "
                  f"({row['peak_cli_mb'] / row['peak_git_mb']:.1f}x)"
                  if "peak_cli_mb" in row else "-")
        print(f"| {str(row['file_system']).split(' on ')[0]} | {row['what']} | "
              f"{fmt_seconds(row['undostore_library_s'])} s | "
              f"{fmt_seconds(row['undostore_cli_s'])} s | {fmt_seconds(row['git_s'])} s | "
              f"`{row['git_command']}` | {row['ratio_library']:.2f}x | {row['ratio_cli']:.2f}x | "
              f"{memory} |")
    if args.note:
        print(f"\nNOTE: {args.note}")
    _print_phases(rows)
    os.makedirs(RESULTS_DIR, exist_ok=True)
    out = os.path.join(RESULTS_DIR, f"restore-{time.strftime('%Y%m%d-%H%M%S')}.json")
    with open(out, "w", encoding="utf-8") as f:
        json.dump({"rows": rows, "load_average": [load_before, common.load_average()],
                   "file_system": common.file_system(work)}, f,
                  indent=1)
    print(f"\n(medians; samples in {out})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
