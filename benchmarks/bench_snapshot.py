"""Snapshot speed, store size and memory: the `undostore snapshot` process against git's
`git add -A && git write-tree` in a private git dir, in the same run, on the same trees.

    python benchmarks/bench_snapshot.py --quick            # 20k tree only, few repeats
    python benchmarks/bench_snapshot.py                    # every case (several minutes)
    python benchmarks/bench_snapshot.py --cases 20k,threads --keep --workdir /tmp/ub
    python benchmarks/bench_snapshot.py --cases c-project --keep --workdir /tmp/ub   # C-like tree
    python benchmarks/bench_snapshot.py --cases real-tree --real-tree ~/src/linux      # any tree

Every snapshot id is checked against git's tree id for the same files. Results are printed as
markdown and written as JSON to benchmarks/results/ (see benchmarks/README.md).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import common  # noqa: E402
import gen_tree  # noqa: E402
import watchman_cases  # noqa: E402
from common import MB, DiskUsage, dir_usage, drop_caches, fmt_mb, fmt_seconds, median  # noqa: E402

CASES = ("20k", "20k-cold", "threads", "100k", "big-file", "node-modules", "startup", "floor",
         "profile",
         "watchman-20k", "watchman-100k", "watchman-1m", "watchman-real", "c-project",
         "real-tree", "frozen-20k", "per-prompt", "resident",
         "profile-c")
QUICK_CASES = ("20k", "20k-cold", "startup")
RESULTS_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results")
TREES = {
    "20k": ("tree", {"files": 20_000, "folders": 1_000}),
    "100k": ("tree", {"files": 100_000, "folders": 5_000}),
    "1m": ("tree", {"files": 1_000_000, "folders": 50_000}),   # UNDOSTORE_MAX_FILES' default
    "big-file": ("big-file", {"size": 1 << 30}),
    "node-modules": ("node-modules", {}),
    "c-project": ("c-project", {"files": 80_000, "folders": 5_000, "gitignores": 300}),
}
MEMORY_LIMIT = 100 * MB
PEAK_LIMITS = {"first": 2.0, "no-change": 1.5}   # peak RSS against git's, by step
PEAK_TARGETS = {step: f"≤ {limit}x git" for step, limit in PEAK_LIMITS.items()}
THREAD_CHOICES = (1, 2, 4)


@dataclass
class Step:
    """One snapshot by one subject."""

    seconds: float
    peak_rss: int | None
    id: str
    hashed: int | None = None


class UndostoreCli:
    """`undostore --root T --store S snapshot --json` as a child process, own store."""

    def __init__(self, label: str, command: list[str], tree: str, state: str,
                 env: dict[str, str]) -> None:
        self.label, self.command, self.tree, self.env = label, command, tree, env
        self.store = os.path.join(state, "store")

    def reset(self) -> None:
        shutil.rmtree(self.store, ignore_errors=True)

    def snapshot(self, measure_memory: bool = False) -> Step:
        run = common.run_process(
            [*self.command, "--root", self.tree, "--store", self.store, "snapshot", "--json"],
            cwd=self.tree, env=self.env, measure_memory=measure_memory).check()
        payload = json.loads(run.stdout)
        return Step(run.seconds, run.peak_rss, payload["id"], payload["hashed"])

    def usage(self) -> DiskUsage:
        return common.dir_usage_by_part(self.store)


class GitCli:
    """`git add -A && git write-tree` with a private GIT_DIR and a fresh index; the first
    snapshot also counts `git init` (undostore's counts creating its store)."""

    label = "git"

    def __init__(self, tree: str, state: str, env: dict[str, str]) -> None:
        self.tree = tree
        self.git_dir = os.path.join(state, "git")
        self.env = {**env, "GIT_DIR": self.git_dir, "GIT_WORK_TREE": tree}

    def reset(self) -> None:
        shutil.rmtree(self.git_dir, ignore_errors=True)

    def snapshot(self, measure_memory: bool = False) -> Step:
        runs = []
        if not os.path.isdir(self.git_dir):
            runs.append(self._git("init", "-q"))
        runs.append(self._git("add", "-A", measure_memory=measure_memory))
        runs.append(self._git("write-tree", measure_memory=measure_memory))
        peaks = [r.peak_rss for r in runs if r.peak_rss is not None]
        return Step(sum(r.seconds for r in runs), max(peaks) if peaks else None,
                    runs[-1].stdout.strip())

    def _git(self, *args: str, measure_memory: bool = False) -> common.ProcessRun:
        return common.run_process(["git", *args], cwd=self.tree, env=self.env,
                                  measure_memory=measure_memory).check()

    def usage(self) -> DiskUsage:
        return dir_usage(self.git_dir)


@dataclass
class Row:
    case: str
    undostore: float | None
    git: float | None
    unit: str = "s"
    target: str = "—"
    limit: float | None = None        # ratio limit, or an absolute limit when `absolute`
    absolute: bool = False

    @property
    def ratio(self) -> float | None:
        if self.undostore is None or not self.git:
            return None
        return self.undostore / self.git

    @property
    def passed(self) -> bool | None:
        if self.limit is None or self.undostore is None:
            return None
        value = self.undostore if self.absolute else self.ratio
        return value is not None and value <= self.limit


@dataclass
class Bench:
    """Settings and everything measured in one run."""

    workdir: str
    repeats: int
    first_repeats: int
    cold_repeats: int
    keep: bool
    env: dict[str, str]
    rows: list[Row] = field(default_factory=list)
    details: dict[str, object] = field(default_factory=dict)
    summaries: dict[str, dict[str, object]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    mismatches: list[str] = field(default_factory=list)
    cold_problem: str | None = None
    python: str = sys.executable     # the interpreter the CLI runs with
    real_tree: str | None = None     # --real-tree: a tree nobody here generated
    tar_made: bool = False           # --tar-made: the walk cases' trees as extracted from a tar

    def log(self, message: str) -> None:
        print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)

    def tree(self, name: str) -> gen_tree.TreeInfo:
        shape, params = TREES[name]
        path = os.path.join(self.workdir, "trees", name)
        self.log(f"tree {name}: generating or reusing {path}")
        os.makedirs(os.path.dirname(path), exist_ok=True)
        return gen_tree.ensure(shape, path, **params)

    def state(self, *parts: str) -> str:
        path = os.path.join(self.workdir, "state", *parts)
        os.makedirs(path, exist_ok=True)
        return path

    def subjects(self, case: str, tree: str, both_clis: bool) -> list:
        commands = common.undostore_commands(self.python)
        if not both_clis:
            commands = dict(list(commands.items())[:1])
        subjects: list = [UndostoreCli(label, cmd, tree, self.state(case, label.replace(" ", "_")),
                                       self.env) for label, cmd in commands.items()]
        return [*subjects, GitCli(tree, self.state(case, "git"), self.env)]


# --- measuring -----------------------------------------------------------------------------


def _files_of(tree: str) -> list[str]:
    out = []
    for folder, dirs, files in os.walk(tree):
        dirs[:] = sorted(d for d in dirs if d != "node_modules")
        out.extend(os.path.join(folder, f) for f in sorted(files) if f != ".gitignore")
    return out


class Rewriter:
    """Gives one file at a time new content; `undo()` puts every original byte back, so the
    generated tree can be reused by later cases."""

    def __init__(self, tree: str) -> None:
        self.tree = tree
        self.files = _files_of(tree)
        self.originals: dict[str, bytes] = {}

    def rewrite(self, round_no: int) -> str:
        path = self.files[(len(self.files) // 2 + 7919 * round_no) % len(self.files)]
        with open(path, "rb") as f:
            old = f.read()
        if not self.originals:
            gen_tree.forget(self.tree)
        self.originals.setdefault(path, old)
        with open(path, "wb") as f:
            f.write(b"# changed in round %d at %d\n" % (round_no, time.time_ns()) + old)
        return path

    def undo(self) -> None:
        for path, data in self.originals.items():
            with open(path, "wb") as f:
                f.write(data)
        if self.originals:
            gen_tree.restored(self.tree)
        self.originals.clear()


def measure_tree(bench: Bench, case: str, tree: str, subjects: list, steps: tuple[str, ...],
                 cold: bool, first_repeats: int, repeats: int, memory_steps: tuple[str, ...] = (),
                 pause: float = 0.0
                 ) -> tuple[dict[str, dict[str, list[Step]]], dict[str, DiskUsage]]:
    """Run `steps` for every subject, interleaved round by round so load hits all alike;
    peak memory is measured in `memory_steps` only (it costs ~1 ms a run). `pause`: seconds
    waited before each timed run (a FUSE file system's attribute cache outlived: see
    `case_frozen`). Returns the runs, and each subject's disk usage right after its (last)
    first snapshot."""
    results: dict[str, dict[str, list[Step]]] = {s.label: {} for s in subjects}
    sizes: dict[str, DiskUsage] = {}
    rewriter = Rewriter(tree) if "one-change" in steps else None

    def run(subject, step: str) -> None:  # noqa: ANN001
        if cold:
            drop_caches()
        else:
            common.settle()
        time.sleep(pause)
        result = subject.snapshot(measure_memory=step in memory_steps)
        results[subject.label].setdefault(step, []).append(result)

    try:
        for step in steps:
            rounds = first_repeats if step == "first" else repeats
            bench.log(f"{case}: {step} x{rounds}{' (cold)' if cold else ''}")
            if step == "no-change" and not cold:
                for subject in subjects:   # untimed: the first runs after a first snapshot
                    subject.snapshot()     # are slower for both tools (caches refilling)
            for round_no in range(rounds):
                if step == "one-change" and rewriter:
                    rewriter.rewrite(round_no)
                for subject in subjects:
                    if step == "first":
                        subject.reset()
                    run(subject, step)
                ids = {s.label: results[s.label][step][-1].id for s in subjects}
                if len(set(ids.values())) != 1:
                    bench.mismatches.append(f"{case} {step} round {round_no}: {ids}")
            if step == "first":
                sizes = {s.label: s.usage() for s in subjects}
    finally:
        if rewriter:
            rewriter.undo()
    return results, sizes


def _med(steps: list[Step]) -> float:
    return median([s.seconds for s in steps])


def _summary(results: dict[str, dict[str, list[Step]]]) -> dict[str, object]:
    return {label: {step: {"median": _med(runs), "min": min(r.seconds for r in runs),
                           "max": max(r.seconds for r in runs), "runs": [asdict(r) for r in runs]}
                    for step, runs in per_step.items()}
            for label, per_step in results.items()}


def add_rows(bench: Bench, title: str, results: dict[str, dict[str, list[Step]]],
             targets: dict[str, float]) -> None:
    git = results["git"]
    for label, per_step in results.items():
        if label == "git":
            continue
        for step, runs in per_step.items():
            limit = targets.get(step)
            bench.rows.append(Row(f"{title}: {step} [{label}]", _med(runs), _med(git[step]),
                                  target=f"≤ {limit}x git" if limit else "—", limit=limit))


def add_size_rows(bench: Bench, title: str, subjects: list, usages: dict[str, DiskUsage],
                  limit: float | None) -> None:
    git_usage = usages["git"]
    sizes: dict[str, object] = {"git": asdict(git_usage)}
    for subject in subjects:
        if subject.label == "git":
            continue
        usage = usages[subject.label]
        sizes[subject.label] = {**asdict(usage), "parts": usage.parts}
        bench.rows.append(Row(f"{title}: store size after first snapshot, MB [{subject.label}]",
                              usage.disk / MB, git_usage.disk / MB, unit="MB",
                              target=f"≤ {limit}x git" if limit else "—", limit=limit))
    bench.details[f"{title} sizes"] = sizes


# --- cases ---------------------------------------------------------------------------------


def case_tree_20k(bench: Bench, cold: bool) -> None:
    info = bench.tree("20k")
    name = "20k-cold" if cold else "20k"
    if cold and bench.cold_problem:
        bench.notes.append(f"20k cold skipped: {bench.cold_problem}")
        bench.log(f"{name}: skipped ({bench.cold_problem})")
        return
    subjects = bench.subjects(name, info.path, both_clis=True)
    repeats = bench.cold_repeats if cold else bench.repeats
    first = bench.cold_repeats if cold else bench.first_repeats
    results, usages = measure_tree(bench, name, info.path, subjects,
                                   ("first", "no-change", "one-change"), cold, first, repeats)
    title = f"20k files, {'cold' if cold else 'warm'} cache"
    add_rows(bench, title, results, {"first": 0.5, "no-change": 2.5, "one-change": 2.5})
    add_size_rows(bench, title, subjects, usages, 0.25)
    bench.summaries[title] = _summary(results)


def case_100k(bench: Bench) -> None:
    info = bench.tree("100k")
    subjects = bench.subjects("100k", info.path, both_clis=False)
    results, usages = measure_tree(bench, "100k", info.path, subjects, ("first", "no-change"),
                                   False, 1, bench.repeats)
    add_rows(bench, "100k files, warm", results, {"no-change": 2.5})
    add_size_rows(bench, "100k files, warm", subjects, usages, None)
    bench.summaries["100k files"] = _summary(results)


def case_node_modules(bench: Bench) -> None:
    info = bench.tree("node-modules")
    subjects = bench.subjects("node-modules", info.path, both_clis=False)
    results, _ = measure_tree(bench, "node-modules", info.path, subjects,
                              ("first", "no-change"), False, bench.first_repeats, bench.repeats)
    title = f"{info.files:,} files + ignored node_modules/ of {info.ignored_files:,}, warm"
    add_rows(bench, title, results, {})
    bench.summaries[title] = _summary(results)


def case_big_file(bench: Bench) -> None:
    info = bench.tree("big-file")
    baseline_runs = [common.run_process([bench.python, "-c", "import undostore"],
                                        env=bench.env, measure_memory=True).check()
                     for _ in range(3)]
    peaks = [r.peak_rss for r in baseline_runs if r.peak_rss is not None]
    baseline = median(peaks) if peaks else None
    subjects = bench.subjects("big-file", info.path, both_clis=False)
    results, usages = measure_tree(bench, "big-file", info.path, subjects,
                                   ("first", "no-change"), False, 1, max(1, bench.repeats // 2),
                                   memory_steps=("first", "no-change"))
    size = f"{info.bytes / 2**30:g} GiB" if info.bytes >= 2**30 else f"{info.bytes / 2**20:g} MiB"
    title = f"one {size} file, warm"
    add_rows(bench, title, results, {})
    cli_label = subjects[0].label
    first = results[cli_label]["first"][0]
    git_first = results["git"]["first"][0]
    above = (first.peak_rss - baseline) if first.peak_rss and baseline else None
    bench.rows.append(Row(f"{title}: first snapshot peak RSS above `python -c \"import "
                          f"undostore\"`, MB [{cli_label}] (git column: git's own peak RSS)",
                          above / MB if above is not None else None,
                          git_first.peak_rss / MB if git_first.peak_rss else None, unit="MB",
                          target="< 100 MB", limit=MEMORY_LIMIT / MB, absolute=True))
    bench.summaries[title] = _summary(results)
    bench.details["big-file memory"] = {"baseline_import_undostore_rss": baseline,
                                        "undostore_first_peak_rss": first.peak_rss,
                                        "git_first_peak_rss": git_first.peak_rss}
    add_size_rows(bench, title, subjects, usages, None)


def case_threads(bench: Bench) -> None:
    """SnapshotOptions(walk_threads, hash_threads) through the library, in this process."""
    from undostore import Workspace
    from undostore.snapshot.snapshot import SnapshotOptions

    info = bench.tree("20k")
    configs: list[tuple[str, SnapshotOptions]] = [
        (f"walk {w} / hash {h}", SnapshotOptions(walk_threads=w, hash_threads=h))
        for w in THREAD_CHOICES for h in THREAD_CHOICES]
    configs.append(("default (walk 1 / hash auto)", SnapshotOptions()))
    table: dict[str, dict[str, float | None]] = {label: {} for label, _ in configs}
    temperatures = [("warm", False)] + ([] if bench.cold_problem else [("cold", True)])
    if bench.cold_problem:
        bench.notes.append(f"threads cold skipped: {bench.cold_problem}")
    for temperature, cold in temperatures:
        firsts = bench.cold_repeats if cold else bench.first_repeats
        repeats = bench.cold_repeats if cold else bench.repeats
        samples: dict[tuple[str, str], list[float]] = {}
        ids: set[str] = set()
        for step, rounds in (("first", firsts), ("no-change", repeats)):
            bench.log(f"threads {temperature}: {step} x{rounds} x{len(configs)} settings")
            for _ in range(rounds):
                for label, options in configs:
                    store = os.path.join(bench.state("threads"), label.replace(" ", "_")
                                         .replace("/", "").replace("(", "").replace(")", ""))
                    if step == "first":
                        shutil.rmtree(store, ignore_errors=True)
                    if cold:
                        drop_caches()
                    started = time.perf_counter()
                    with Workspace(info.path, store) as ws:
                        result = ws.snapshot(options=options)
                    samples.setdefault((label, step), []).append(time.perf_counter() - started)
                    ids.add(result.id)
        if len(ids) != 1:
            bench.mismatches.append(f"threads {temperature}: different ids {sorted(ids)}")
        for (label, step), values in samples.items():
            table[label][f"{temperature} {step}"] = median(values)
    bench.details["threads"] = table


def _kept_files(tree: str) -> list[str]:
    """Disk paths of the files a snapshot keeps (a one-change must change one of those, not an
    ignored build output)."""
    from undostore.snapshot.walk import list_paths

    return [os.path.join(tree, *rel.split("/")) for rel in list_paths(tree)
            if rel.rpartition("/")[2] != ".gitignore"]


class Rebuilder:
    """A build run again: every ignored file (a build output) unlinked and written anew with
    the same bytes, so each folder holding one moves its stat while no kept file changes."""

    def __init__(self, tree: str, kept: list[str]) -> None:
        keep = set(kept)
        self.outputs: list[str] = []
        for folder, dirs, names in os.walk(tree):
            if ".git" in dirs:
                dirs.remove(".git")
            self.outputs += [os.path.join(folder, name) for name in names
                             if name != ".gitignore" and os.path.join(folder, name) not in keep]

    def rebuild(self) -> None:
        for path in self.outputs:
            with open(path, "rb") as f:
                data = f.read()
            os.unlink(path)
            with open(path, "wb") as f:
                f.write(data)


def case_walk_tree(bench: Bench, name: str) -> None:
    """The generated C-like tree (`c-project`) or `--real-tree DIR` (`real-tree`), walked with
    no watchman: first, no-change, one-change and rebuild (every ignored output written anew,
    no kept file changed) snapshots against git in the same run, each with its peak RSS."""
    if name == "real-tree":
        if not bench.real_tree:
            bench.notes.append("real-tree skipped: no --real-tree given")
            return
        path = os.path.abspath(bench.real_tree)
        title = f"real tree {os.path.basename(path)}, walk (no watchman)"
    else:
        info = bench.tree("c-project")
        path = info.path
        title = (f"C-like tree ({info.files:,} files, {info.folders:,} folders, "
                 f"{info.ignored_files:,} ignored), walk (no watchman)")
    if bench.tar_made:
        path = _tar_made(bench, path, name)
        title = title.replace(", walk", ", extracted from a tar, walk")
    env = {**bench.env, "UNDOSTORE_FSMONITOR": "off"}
    command = list(common.undostore_commands(bench.python).values())[0]
    subjects = [UndostoreCli("undostore", command, path, bench.state(name, "undostore"), env),
                GitCli(path, bench.state(name, "git"), env)]
    steps = ("first", "no-change", "one-change", "rebuild")
    rewriter = Rewriter(path)
    rewriter.files = _kept_files(path)
    rebuilder = Rebuilder(path, rewriter.files)
    results: dict[str, dict[str, list[Step]]] = {s.label: {} for s in subjects}
    try:
        for step in steps:
            rounds = bench.first_repeats if step == "first" else bench.repeats
            bench.log(f"{name}: {step} x{rounds}")
            if step == "no-change":
                for subject in subjects:   # untimed, as in measure_tree
                    subject.snapshot()
            for round_no in range(rounds):
                if step == "one-change":
                    rewriter.rewrite(round_no)
                if step == "rebuild":
                    rebuilder.rebuild()
                for subject in subjects:
                    if step == "first":
                        subject.reset()
                    common.settle()
                    results[subject.label].setdefault(step, []).append(
                        subject.snapshot(measure_memory=True))
                ids = {s.label: results[s.label][step][-1].id for s in subjects}
                if len(set(ids.values())) != 1:
                    bench.mismatches.append(f"{name} {step} round {round_no}: {ids}")
    finally:
        rewriter.undo()
    add_rows(bench, title, results, {"first": 0.7, "no-change": 1.5, "one-change": 1.5,
                                     "rebuild": 1.5})
    for step in steps:
        mine = [r.peak_rss for r in results["undostore"][step] if r.peak_rss]
        theirs = [r.peak_rss for r in results["git"][step] if r.peak_rss]
        bench.rows.append(Row(f"{title}: {step} peak RSS, MB", median(mine) / MB if mine else None,
                              median(theirs) / MB if theirs else None, unit="MB",
                              target="≤ 2x git", limit=2.0))
    bench.summaries[title] = _summary(results)


FUSE_CACHE_SECONDS = 1.0   # how long the kernel keeps a FUSE mount's attributes (its default)


def case_frozen(bench: Bench) -> None:
    """The 20k tree on a FUSE file system whose folder times never move (as object-store
    mounts such as s3fs and gcsfuse report them; the tests' power-cut file system with
    `--frozen-folder-times`, a Python FUSE daemon, so every system call is slow for git and
    undostore alike): first, no-change and one-change snapshots against git, then a delete, an
    add and a rename, each id checked against git's."""
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    sys.path.insert(0, repo)
    from tests.powercut.mount import PowerCut, skip_reason

    problem = skip_reason()
    if problem:
        bench.notes.append(f"frozen-20k skipped: {problem}")
        bench.log(f"frozen-20k: skipped ({problem})")
        return
    info = bench.tree("20k")
    state = bench.state("frozen-20k")
    fs = PowerCut(os.path.join(state, "backing"), os.path.join(state, "mnt"),
                  frozen_folder_times=True)
    try:
        path = fs.path("tree")
        os.mkdir(path)
        before = os.stat(path).st_mtime_ns
        os.mkdir(os.path.join(path, "probe"))
        os.rmdir(os.path.join(path, "probe"))
        if os.stat(path).st_mtime_ns != before:
            raise RuntimeError("the power-cut file system did not freeze folder times")
        bench.log(f"frozen-20k: copying {info.path} onto the FUSE mount")
        _tar_copy(info.path, path)
        env = {**bench.env, "UNDOSTORE_FSMONITOR": "off"}
        command = list(common.undostore_commands(bench.python).values())[0]
        subjects = [UndostoreCli("undostore", command, path, bench.state("frozen-20k", "u"),
                                 env), GitCli(path, bench.state("frozen-20k", "git"), env)]
        # The mount keeps names and attributes in the kernel for a second (as FUSE does by
        # default), so a run that starts within a second of the last one finds most lstats
        # answered by the kernel: the faster tool, run right after the other, got them and the
        # slower one not (git 0.17-0.19 s back to back, 0.56-0.63 s a second and a half apart).
        # Each timed run waits the cache out, as a hook call seconds after the last finds it.
        results, _ = measure_tree(bench, "frozen-20k", path, subjects,
                                  ("first", "no-change", "one-change"), False, 1, bench.repeats,
                                  pause=FUSE_CACHE_SECONDS + 0.5)
        title = "20k files, FUSE with frozen folder times, walk"
        add_rows(bench, title, results, {"no-change": 2.0, "one-change": 2.0})
        bench.summaries[title] = _summary(results)
        def folders() -> list[str]:
            return sorted(d for d, _, _ in os.walk(path) if d != path)

        shutil.rmtree(folders()[len(folders()) // 2])
        with open(os.path.join(folders()[0], "added.txt"), "w") as f:
            f.write("added\n")
        os.rename(folders()[-1], os.path.join(path, "renamed"))
        ids = {s.label: s.snapshot().id for s in subjects}
        bench.notes.append(f"frozen-20k: after a delete, an add and a rename: ids {ids}")
        if len(set(ids.values())) != 1:
            bench.mismatches.append(f"frozen-20k after delete, add and rename: {ids}")
    finally:
        fs.close()


def _tar_made(bench: Bench, path: str, name: str) -> str:
    """A copy of the tree at `path` as a user gets one from a release tarball: `tar -c | tar -x`
    (every file's and folder's mtime a whole second; the ctimes the kernel's own), made anew in
    the work folder on each run."""
    copy = os.path.join(bench.workdir, "trees", f"{name}-tar-made")
    shutil.rmtree(copy, ignore_errors=True)
    os.makedirs(copy)
    bench.log(f"{name}: extracting a tar of {path} into {copy}")
    _tar_copy(path, copy)
    return copy


def _tar_copy(source: str, dest: str) -> None:
    """`tar -c` of `source` extracted into the existing folder `dest` (`tar -x`)."""
    pack = subprocess.Popen(["tar", "-C", source, "-cf", "-", "."], stdout=subprocess.PIPE)
    subprocess.run(["tar", "-C", dest, "-xf", "-"], stdin=pack.stdout, check=True)
    pack.stdout.close()   # type: ignore[union-attr]
    if pack.wait() != 0:
        raise RuntimeError(f"tar -c {source} failed")


def case_profile_c(bench: Bench) -> None:
    """cProfile of the CLI's no-change and one-change snapshots on the C-like tree (no
    watchman)."""
    info = bench.tree("c-project")
    rewriter = Rewriter(info.path)
    rewriter.files = _kept_files(info.path)
    saved = dict(bench.env)
    bench.env["UNDOSTORE_FSMONITOR"] = "off"
    try:
        bench.details["profile"] = _profile(bench, info.path, rewriter)
        bench.details["profile"]["tree"] = "the C-like tree, no watchman"  # type: ignore[index]
    finally:
        bench.env.clear()
        bench.env.update(saved)
        rewriter.undo()


class WatchedCli(UndostoreCli):
    """The CLI with watchman: a fresh store's first snapshot also pays watchman's crawl."""

    def __init__(self, *args, daemon: watchman_cases.PrivateWatchman, **kwargs) -> None:  # noqa: ANN002, ANN003
        super().__init__(*args, **kwargs)
        self.daemon = daemon

    def reset(self) -> None:
        super().reset()
        self.daemon.forget(self.tree)


def case_watchman(bench: Bench, name: str) -> None:
    """Walk vs watchman vs git: CLI (time, peak RSS) and in-process (time, traced peak)."""
    problem = watchman_cases.available()
    if problem:
        bench.notes.append(f"{name} skipped: {problem}")
        bench.log(f"{name}: skipped ({problem})")
        return
    size = name.split("-")[1]
    if size == "real":
        if not bench.real_tree:
            bench.notes.append(f"{name} skipped: no --real-tree given")
            return
        path = os.path.abspath(bench.real_tree)
        count = sum(len(files) for _, _, files in os.walk(path))
        size = f"real tree {os.path.basename(path)} ({count:,} files)"
        info = gen_tree.TreeInfo("real", path, count, 0, 0)
    else:
        info = bench.tree(size)
    daemon = watchman_cases.PrivateWatchman(bench.state(name, "watchman"))
    daemon.start()
    try:
        command = list(common.undostore_commands(bench.python).values())[0]
        walk = UndostoreCli("undostore, walk full", command, info.path,
                            bench.state(name, "walk"),
                            watchman_cases.walk_env(bench.env, "off", daemon))
        watched = WatchedCli("undostore, watchman", command, info.path,
                             bench.state(name, "watched"),
                             watchman_cases.walk_env(bench.env, "watchman", daemon),
                             daemon=daemon)
        subjects = [walk, watched, GitCli(info.path, bench.state(name, "git"), bench.env)]
        big = size != "20k"
        firsts = 1 if big else bench.first_repeats
        results, _ = measure_tree(bench, name, info.path, subjects,
                                  ("first", "no-change", "one-change"), False, firsts,
                                  bench.repeats, memory_steps=("first", "no-change", "one-change"))
        title = f"{size}{'' if size.startswith('real') else ' files'}, CLI"
        add_rows(bench, title, results, {"no-change": 2.0 if big else 2.5,
                                         "one-change": 2.5})
        git = results["git"]
        for label in (walk.label, watched.label):
            for step in ("first", "no-change", "one-change"):
                mine = [r.peak_rss for r in results[label][step] if r.peak_rss]
                theirs = [r.peak_rss for r in git[step] if r.peak_rss]
                bench.rows.append(Row(f"{title}: {step} peak RSS, MB [{label}]",
                                      median(mine) / MB if mine else None,
                                      median(theirs) / MB if theirs else None, unit="MB",
                                      target=PEAK_TARGETS.get(step, "—"),
                                      limit=PEAK_LIMITS.get(step)))
        bench.summaries[f"{name} CLI"] = _summary(results)
        bench.log(f"{name}: in-process")
        rewriter = Rewriter(info.path)
        if name == "watchman-real":  # any file of the tree, node_modules/ included
            rewriter.files = sorted(os.path.join(d, f) for d, _, files in os.walk(info.path)
                                    for f in files)
        table = bench.details.setdefault("in-process", {})
        try:
            for mode in watchman_cases.WALK_MODES:
                store = os.path.join(bench.state(name, f"lib-{mode}"), "store")
                shutil.rmtree(store, ignore_errors=True)
                label = f"{size}, {'walk full' if mode == 'off' else 'watchman'}"
                table[label] = watchman_cases.in_process(info.path, store, mode, daemon,
                                                         rewriter, bench.repeats, 5000)
        finally:
            rewriter.undo()
    finally:
        daemon.stop()


def case_startup(bench: Bench) -> None:
    """What a no-change snapshot cannot go below: the interpreter, the imports, git's start."""
    python = bench.python
    commands = {"python -c pass": [python, "-c", "pass"],
                "python -c 'import undostore'": [python, "-c", "import undostore"],
                "python -c 'import undostore_cli.main'": [python, "-c",
                                                          "import undostore_cli.main"],
                "undostore --help": [*next(iter(common.undostore_commands(python).values())),
                                     "--help"],
                "git --version": ["git", "--version"]}
    floors: dict[str, dict[str, float | None]] = {}
    bench.log(f"startup: {len(commands)} commands x{bench.repeats}")
    runs: dict[str, list[common.ProcessRun]] = {name: [] for name in commands}
    for _ in range(bench.repeats):
        for name, argv in commands.items():
            runs[name].append(common.run_process(argv, env=bench.env).check())
    for name, samples in runs.items():
        memory = common.run_process(commands[name], env=bench.env, measure_memory=True).check()
        floors[name] = {"median": median([r.seconds for r in samples]),
                        "peak_rss": memory.peak_rss}
    bench.details["startup"] = floors


def markdown_startup(floors: dict[str, dict[str, float | None]]) -> str:
    lines = ["| command | median s | peak RSS MB |", "|---|---:|---:|"]
    lines += [f"| `{name}` | {fmt_seconds(v['median'])} | {fmt_mb(v['peak_rss'])} |"
              for name, v in floors.items()]
    return "\n".join(lines)


def case_resident(bench: Bench) -> None:
    """The per-prompt hook (`UserPromptSubmit`, a new prompt each round) in its own process and
    through the resident process (`UNDOSTORE_RESIDENT=on`, started ahead here as its first hook
    call would start it), interleaved round by round: the 20k tree and the real tree
    (`--real-tree`), walking and with watchman (a private daemon)."""
    trees = {"20k files": bench.tree("20k").path}
    if bench.real_tree:
        real = os.path.abspath(bench.real_tree)
        trees[f"real tree {os.path.basename(real)}"] = real
    problem = watchman_cases.available()
    daemon = None if problem else watchman_cases.PrivateWatchman(bench.state("resident", "wm"))
    if problem:
        bench.notes.append(f"resident: watchman rows skipped ({problem})")
    command = list(common.undostore_commands(bench.python).values())[0]
    run = os.path.join(bench.env["UNDOSTORE_HOME"], "run")
    server = None
    try:
        if daemon is not None:
            daemon.start()
        server = subprocess.Popen([bench.python, "-m", "undostore_cli.resident.serve"],
                                  env=bench.env, start_new_session=True,
                                  stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
        deadline = time.monotonic() + 60
        while not os.path.exists(os.path.join(run, "resident.json")):
            if time.monotonic() > deadline or server.poll() is not None:
                raise RuntimeError("the resident process did not start")
            time.sleep(0.05)
        table: dict[str, dict[str, float]] = {}
        for title, path in trees.items():
            for mode in (["off"] if daemon is None else ["off", "watchman"]):
                env = (watchman_cases.walk_env(bench.env, mode, daemon) if daemon is not None
                       else {**bench.env, "UNDOSTORE_FSMONITOR": "off"})
                # Each its own store: a snapshot with watchman saves its clock in the stat cache,
                # and the other's calls would make the cache the resident process preloaded stale.
                own = {**env, "UNDOSTORE_RESIDENT": "off",
                       "UNDOSTORE_HOME": os.path.join(bench.state("resident", "own"), "home")}
                resident = {**env, "UNDOSTORE_RESIDENT": "on"}
                session = f"resident-{mode}"
                for warm in (-3, -2, -1):   # the first snapshot, the cache, the watch
                    _hook(command, path, own, session, "UserPromptSubmit", warm)
                    _hook(command, path, resident, session, "UserPromptSubmit", warm)
                bench.log(f"resident {title}, {mode}: x{bench.repeats}")
                runs: dict[str, list[float]] = {"own process": [], "resident": []}
                for round_no in range(bench.repeats):
                    common.settle()
                    runs["own process"].append(_hook(command, path, own, session,
                                                     "UserPromptSubmit", 2 * round_no).seconds)
                    common.settle()
                    runs["resident"].append(_hook(command, path, resident, session,
                                                  "UserPromptSubmit", 2 * round_no + 1).seconds)
                medians = {k: median(v) for k, v in runs.items()}
                watched = mode == "watchman"
                label = f"{title}, {'watchman' if watched else 'walk'}"
                table[label] = medians
                bench.rows.append(Row(
                    f"{label}: the hook through the resident process (the git column: in its "
                    "own process)",
                    medians["resident"], medians["own process"],
                    target="< 0.050 s" if watched else "—",
                    limit=0.050 if watched else None, absolute=True))
                if mode == "off":
                    table[f"{title}, status"] = _status_both_ways(bench, command, path, title,
                                                                  own, resident, session)
        with open(os.path.join(run, "resident.json"), encoding="utf-8") as f:
            bench.notes.append(f"resident: {f.read()} (every call through it counted)")
        bench.details["resident"] = table
    finally:
        if server is not None and server.poll() is None:
            os.killpg(server.pid, signal.SIGTERM)
            server.wait(timeout=30)
        if daemon is not None:
            daemon.stop()


def _status_both_ways(bench: Bench, command: list[str], path: str, title: str,
                      own: dict[str, str], resident: dict[str, str], session: str
                      ) -> dict[str, float]:
    """The footer's `status` (Claude Code's statusLine JSON on stdin) in its own process and
    through the resident process, interleaved: the medians, and a row."""
    line = json.dumps({"session_id": session, "cwd": path}).encode()
    runs: dict[str, list[float]] = {"own process": [], "resident": []}
    for _ in range(bench.repeats):
        for name, env in (("own process", own), ("resident", resident)):
            common.settle()
            runs[name].append(common.run_process([*command, "status"], cwd=path, env=env,
                                                 stdin=line).check().seconds)
    medians = {k: median(v) for k, v in runs.items()}
    bench.rows.append(Row(f"{title}: status through the resident process (the "
                          "git column: in its own process)", medians["resident"],
                          medians["own process"], target="—", absolute=True))
    return medians


# Run in a child and timed whole: a Python program that lists the tree and lstats every file.
_WALK_STAT = """
import os, sys
for top, dirs, files in os.walk(sys.argv[1]):
    dirs[:] = [d for d in dirs if d != ".git"]
    for name in files:
        os.lstat(os.path.join(top, name))
"""

# Run in a child: every file of the tree `lstat`-ed by name in its open folder, as a reused
# folder's files are (walk.py `_reused_files`); the listing is gathered first, untimed.
_STAT_LOOP = """
import os, sys, time
folders = []
for top, dirs, files in os.walk(sys.argv[1]):
    dirs[:] = [d for d in dirs if d != ".git"]
    folders.append((top, files))
started = time.perf_counter()
for top, files in folders:
    fd = os.open(top, os.O_RDONLY | os.O_DIRECTORY)
    for name in files:
        os.stat(name, dir_fd=fd, follow_symlinks=False)
    os.close(fd)
print(time.perf_counter() - started)
"""


def case_floor(bench: Bench) -> None:
    """What a no-change snapshot by any Python CLI built this way cannot go below, against git
    in the same run: the interpreter and a snapshot's imports, plus one `lstat` per file from
    Python (git lstats from C, on several threads). The rest of undostore's time is its own."""
    trees = {"20k files": bench.tree("20k").path}
    if bench.real_tree:
        trees[f"real tree {os.path.basename(os.path.abspath(bench.real_tree))}"] = (
            os.path.abspath(bench.real_tree))
    command = list(common.undostore_commands(bench.python).values())[0]
    imports = [bench.python, "-c", "import undostore_cli.main, undostore_cli.commands.snapshot, "
               "undostore.snapshot.snapshot, undostore.workspace"]
    env = {**bench.env, "UNDOSTORE_FSMONITOR": "off"}
    table: dict[str, dict[str, float]] = {}
    for title, path in trees.items():
        name = "floor-" + title.replace(" ", "-")
        ours = UndostoreCli("undostore", command, path, bench.state(name, "undostore"), env)
        git = GitCli(path, bench.state(name, "git"), env)
        for subject in (ours, git):
            subject.reset()
            subject.snapshot()
            subject.snapshot()   # the second run leaves the cache a no-change run reads
        bench.log(f"floor {title}: x{bench.repeats}")
        runs: dict[str, list[float]] = {"imports": [], "stat loop": [], "undostore": [],
                                        "git": []}
        for _ in range(bench.repeats):
            common.settle()
            runs["imports"].append(common.run_process(imports, env=env).check().seconds)
            loop = common.run_process([bench.python, "-c", _STAT_LOOP, path], env=env).check()
            runs["stat loop"].append(float(loop.stdout))
            common.settle()
            runs["undostore"].append(ours.snapshot().seconds)
            common.settle()
            runs["git"].append(git.snapshot().seconds)
        table[title] = {k: median(v) for k, v in runs.items()}
    bench.details["floor"] = table


def _hook(command: list[str], path: str, env: dict[str, str], session: str, event_name: str,
          round_no: int) -> common.ProcessRun:
    """`undostore hook --host claude-code` with Claude Code's event (a prompt of its own for
    each round), as the host runs it."""
    event = {"session_id": session, "cwd": path, "hook_event_name": event_name}
    if event_name == "UserPromptSubmit":
        event.update(prompt=f"bench prompt {round_no}", prompt_id=f"{session}-{round_no}")
    return common.run_process([*command, "hook", "--host", "claude-code"], cwd=path, env=env,
                              stdin=json.dumps(event).encode()).check()


def case_per_prompt(bench: Bench) -> None:
    """What a host pays on every prompt at 20k files: Claude Code's `UserPromptSubmit` (a new
    prompt each run: an undo point and a snapshot that stats every file), its `Stop` (the files
    after the turn), and the footer's `status`, against two floors in the same rounds: issue
    47's, a Python process that walks the tree and lstats every file (`os.walk` + `os.lstat`,
    spawn to reap), and the bare one, the interpreter's start plus the `lstat` loop alone with
    the listing untimed (what no Python hook goes below, as `floor`); git's no-change run for
    scale."""
    path = bench.tree("20k").path
    command = list(common.undostore_commands(bench.python).values())[0]
    env = {**bench.env, "UNDOSTORE_FSMONITOR": "off"}
    git = GitCli(path, bench.state("per-prompt", "git"), env)
    git.reset()
    git.snapshot()
    git.snapshot()
    session = "bench-per-prompt"

    def hook(event_name: str, round_no: int) -> common.ProcessRun:
        return _hook(command, path, env, session, event_name, round_no)

    status_line = json.dumps({"session_id": session, "cwd": path,
                              "workspace": {"current_dir": path}}).encode()
    hook("UserPromptSubmit", -2)   # the first snapshot and the stat cache, untimed
    hook("Stop", -2)
    hook("UserPromptSubmit", -1)
    hook("Stop", -1)
    bench.log(f"per-prompt: x{bench.repeats}")
    runs: dict[str, list[float]] = {name: [] for name in (
        "python -c pass", "stat loop", "walk + lstat process", "hook UserPromptSubmit",
        "hook Stop", "status", "git")}
    for round_no in range(bench.repeats):
        common.settle()
        runs["walk + lstat process"].append(common.run_process(
            [bench.python, "-c", _WALK_STAT, path], env=env).check().seconds)
        common.settle()
        runs["python -c pass"].append(
            common.run_process([bench.python, "-c", "pass"], env=env).check().seconds)
        loop = common.run_process([bench.python, "-c", _STAT_LOOP, path], env=env).check()
        runs["stat loop"].append(float(loop.stdout))
        common.settle()
        runs["hook UserPromptSubmit"].append(hook("UserPromptSubmit", round_no).seconds)
        common.settle()
        runs["hook Stop"].append(hook("Stop", round_no).seconds)
        common.settle()
        runs["status"].append(common.run_process(
            [*command, "status"], cwd=path, env=env, stdin=status_line).check().seconds)
        common.settle()
        runs["git"].append(git.snapshot().seconds)
    table = {name: median(values) for name, values in runs.items()}
    floor = table["python -c pass"] + table["stat loop"]
    bench.details["per-prompt"] = {**table, "floor": floor}
    for name in ("hook UserPromptSubmit", "hook Stop"):
        bench.rows.append(Row(f"20k files, {name} against issue 47's floor (the git column: a "
                              "Python process that walks and lstats every file)", table[name],
                              table["walk + lstat process"], target="≤ 1.5x", limit=1.5))
        bench.rows.append(Row(f"20k files, {name} against the bare floor (the git column: "
                              "Python's start + the lstat loop alone)", table[name], floor))
    bench.rows.append(Row("20k files, status (the footer; git column: python -c pass)",
                          table["status"], table["python -c pass"], target="≤ 0.060 s",
                          limit=0.060, absolute=True))
    bench.notes.append(
        "per-prompt (medians): " + ", ".join(f"{k} {fmt_seconds(v)} s" for k, v in table.items())
        + f"; floor {fmt_seconds(floor)} s; git no change {fmt_seconds(table['git'])} s")


def markdown_floor(table: dict[str, dict[str, float]]) -> str:
    lines = ["| tree | interpreter + imports | Python lstat of every file | floor / git | "
             "undostore no-change / git | git no-change |", "|---|---:|---:|---:|---:|---:|"]
    for title, v in table.items():
        floor = v["imports"] + v["stat loop"]
        lines.append(f"| {title} | {fmt_seconds(v['imports'])} | {fmt_seconds(v['stat loop'])} | "
                     f"{floor / v['git']:.2f}x | {v['undostore'] / v['git']:.2f}x | "
                     f"{fmt_seconds(v['git'])} |")
    return "\n".join(lines)


PROFILE_KINDS = ("no-change", "one-change")


def case_profile(bench: Bench) -> None:
    """`-X importtime` and cProfile of the CLI's no-change and one-change snapshots (20k)."""
    info = bench.tree("20k")
    rewriter = Rewriter(info.path)
    try:
        bench.details["profile"] = _profile(bench, info.path, rewriter)
    finally:
        rewriter.undo()


def _profile(bench: Bench, tree: str, rewriter: Rewriter) -> dict[str, dict[str, object]]:
    state = bench.state("profile")
    store = os.path.join(state, "store")
    shutil.rmtree(store, ignore_errors=True)
    snapshot = ["-m", "undostore", "--root", tree, "--store", store, "snapshot", "--json"]
    common.run_process([bench.python, *snapshot], env=bench.env).check()  # the first
    common.run_process([bench.python, *snapshot], env=bench.env).check()  # warm the cache
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    shorten = {repo + os.sep: "", os.path.dirname(os.__file__) + os.sep: "<stdlib>/"}
    for path in sys.path:
        if path.endswith("site-packages"):
            shorten[path + os.sep] = "<site>/"
    out: dict[str, dict[str, object]] = {}
    for n, kind in enumerate(PROFILE_KINDS):
        bench.log(f"profile: {kind}")
        if kind == "one-change":
            rewriter.rewrite(2000 + 2 * n)
        imports = common.run_process([bench.python, "-X", "importtime", *snapshot],
                                     env=bench.env).check()
        costs = common.parse_importtime(imports.stderr)
        top_level = sorted((c for c in costs if c.depth == 0), key=lambda c: -c.cumulative_us)
        if kind == "one-change":
            rewriter.rewrite(2001 + 2 * n)
        prof = os.path.join(state, f"{kind}.prof")
        run = common.run_process([bench.python, "-m", "cProfile", "-o", prof, *snapshot],
                                 env=bench.env).check()
        out[kind] = {
            "importtime_wall_s": imports.seconds,
            "import_total_us": sum(c.cumulative_us for c in costs if c.depth == 0),
            "top_imports": [asdict(c) for c in top_level[:15]],
            "cprofile_wall_s": run.seconds,
            "snapshot_json": json.loads(run.stdout.strip().splitlines()[0]),
            "cumtime": common.pstats_text(prof, "cumulative", 30, shorten),
            "tottime": common.pstats_text(prof, "tottime", 20, shorten)}
    return out


def markdown_profile(profile: dict[str, dict[str, object]]) -> str:
    tree = profile.pop("tree", "the 20k tree")
    parts = [f"### Profile of the CLI snapshot on {tree} (warm)"]
    for kind, data in profile.items():
        snap = data["snapshot_json"]
        parts += ["", f"#### {kind}: imports {data['import_total_us'] / 1e6:.3f} s in total "
                      f"(under -X importtime, whole run {data['importtime_wall_s']:.3f} s); "
                      f"cProfile run {data['cprofile_wall_s']:.3f} s, "
                      f"hashed {snap['hashed']} (library's own seconds {snap['seconds']})",
                  "", "| top-level import | cumulative ms | self ms |", "|---|---:|---:|"]
        parts += [f"| {c['module']} | {c['cumulative_us'] / 1000:.1f} | {c['self_us'] / 1000:.1f} |"
                  for c in data["top_imports"]]  # type: ignore[union-attr]
        parts += ["", "cProfile, by cumulative time:", "", "```", str(data["cumtime"]), "```",
                  "", "cProfile, by own time:", "", "```", str(data["tottime"]), "```"]
    return "\n".join(parts)


# --- output --------------------------------------------------------------------------------


def _cell(row: Row, value: float | None) -> str:
    return fmt_seconds(value) if row.unit == "s" else ("—" if value is None else f"{value:.1f}")


def markdown_rows(rows: list[Row]) -> str:
    lines = ["| case | undostore s | git s | ratio | target | pass/fail |",
             "|---|---:|---:|---:|---|---|"]
    for row in rows:
        ratio = "—" if row.ratio is None else f"{row.ratio:.2f}x"
        verdict = {True: "pass", False: "FAIL", None: "—"}[row.passed]
        lines.append(f"| {row.case} | {_cell(row, row.undostore)} | {_cell(row, row.git)} | "
                     f"{ratio} | {row.target} | {verdict} |")
    return "\n".join(lines)


def markdown_threads(table: dict[str, dict[str, float | None]]) -> str:
    columns = ["warm first", "warm no-change", "cold first", "cold no-change"]
    columns = [c for c in columns if any(c in v for v in table.values())]
    lines = ["| library setting | " + " | ".join(f"{c} s" for c in columns) + " |",
             "|---|" + "---:|" * len(columns)]
    for label, values in table.items():
        lines.append(f"| {label} | " + " | ".join(fmt_seconds(values.get(c)) for c in columns)
                     + " |")
    return "\n".join(lines)


def markdown_runs(summaries: dict[str, dict[str, object]]) -> str:
    lines = ["| case | subject | step | runs | median s | min s | max s | hashed |",
             "|---|---|---|---:|---:|---:|---:|---|"]
    for case, per_subject in summaries.items():
        for subject, per_step in per_subject.items():
            for step, stats in per_step.items():  # type: ignore[union-attr]
                hashed = {r["hashed"] for r in stats["runs"]} - {None}
                lines.append(f"| {case} | {subject} | {step} | {len(stats['runs'])} | "
                             f"{fmt_seconds(stats['median'])} | {fmt_seconds(stats['min'])} | "
                             f"{fmt_seconds(stats['max'])} | "
                             f"{','.join(map(str, sorted(hashed))) or '—'} |")
    return "\n".join(lines)


def report(bench: Bench, meta: dict[str, object]) -> str:
    parts = ["## undostore snapshot vs git add -A && git write-tree", ""]
    parts += [f"- {k}: {v}" for k, v in meta.items()]
    parts += [f"- NOTE: {n}" for n in bench.notes]
    if bench.mismatches:
        parts += [f"- ID MISMATCH: {m}" for m in bench.mismatches]
    else:
        parts.append("- every undostore snapshot id equalled git's write-tree id")
    if bench.rows:
        parts += ["", markdown_rows(bench.rows)]
    sizes = {k: v for k, v in bench.details.items() if k.endswith(" sizes")}
    if sizes:
        parts += ["", "### Disk usage (st_blocks; apparent size in brackets)", ""]
        for title, per_subject in sizes.items():
            for label, usage in per_subject.items():  # type: ignore[union-attr]
                inner = ", ".join(f"{name}/ {fmt_mb(size)}"
                                  for name, size in usage.get("parts", {}).items())
                parts.append(f"- {title[:-6]}, {label}: {fmt_mb(usage['disk'])} MB "
                             f"({fmt_mb(usage['apparent'])} MB, {usage['files']:,} files)"
                             + (f": {inner}" if inner else ""))
    if "in-process" in bench.details:
        parts += ["", "### In-process snapshots (library call in the benchmark's process, median)",
                  "", watchman_cases.markdown_in_process(bench.details["in-process"])]
    if "threads" in bench.details:
        parts += ["", "### Library thread settings (20k tree, in-process, median)", "",
                  markdown_threads(bench.details["threads"])]  # type: ignore[arg-type]
    if "startup" in bench.details:
        parts += ["", "### Start-up floors (median of runs)", "",
                  markdown_startup(bench.details["startup"])]  # type: ignore[arg-type]
    if "floor" in bench.details:
        parts += ["", "### No-change floors (median; the floor is what no Python walk goes "
                  "below)", "", markdown_floor(bench.details["floor"])]  # type: ignore[arg-type]
    if bench.summaries:
        parts += ["", "### Every measured step (the spread shows the noise)", "",
                  markdown_runs(bench.summaries)]
    if "profile" in bench.details:
        parts += ["", markdown_profile(bench.details["profile"])]  # type: ignore[arg-type]
    return "\n".join(parts) + "\n"


def machine_meta(started_load: str, python: str, source: str) -> dict[str, object]:
    import undostore

    try:
        from importlib.metadata import version

        dulwich_version = version("dulwich")
    except Exception:  # noqa: BLE001 (metadata is informational only)
        dulwich_version = "unknown"
    return {"date (UTC)": time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime()),
            "machine": f"{platform.platform()}, {os.cpu_count()} cores",
            "load average at start (1/5/15 min)": started_load,
            "load average at end": common.load_average(),
            "python": sys.version.split()[0], "CLI interpreter": python,
            "undostore": f"{undostore.__version__}, source digest {source} (undostore/, cli/)",
            "dulwich": dulwich_version, "git": common.tool_version(["git", "--version"]),
            "peak memory measured with": common.memory_method()}


# --- main ----------------------------------------------------------------------------------


WORKDIR_PARTS = ("trees", "state", "home", "pycache", "tiny")


def remove_workdir(workdir: str, created: bool) -> None:
    """Remove what this benchmark put in `workdir` (never anything else a user's folder holds),
    and the folder itself if this run created it or it is left empty."""
    for part in WORKDIR_PARTS:  # trees/ also holds the generator's marker files
        shutil.rmtree(os.path.join(workdir, part), ignore_errors=True)
    if created or not os.listdir(workdir):
        shutil.rmtree(workdir, ignore_errors=True)


def warm_bytecode(bench: Bench) -> None:
    """One snapshot of a tiny tree by each CLI, so later runs load bytecode, not source."""
    tiny = os.path.join(bench.workdir, "tiny")
    shutil.rmtree(tiny, ignore_errors=True)
    os.makedirs(os.path.join(tiny, "tree", "sub"))
    with open(os.path.join(tiny, "tree", "sub", "a.txt"), "wb") as f:
        f.write(b"a\n")
    for n, command in enumerate(common.undostore_commands(bench.python).values()):
        for _ in range(2):  # the second run also takes the no-change path
            common.run_process([*command, "--root", os.path.join(tiny, "tree"), "--store",
                                os.path.join(tiny, f"store{n}"), "snapshot"],
                               env=bench.env).check()
    common.run_process([bench.python, "-c", "import dulwich.pack, dulwich.object_store"],
                       env=bench.env).check()
    shutil.rmtree(tiny)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true",
                        help=f"smoke test: cases {','.join(QUICK_CASES)}, 2 repeats, 1 first")
    parser.add_argument("--cases", help=f"comma-separated, from: {','.join(CASES)} (default all)")
    parser.add_argument("--repeats", type=int, help="runs of each fast warm step (default 5)")
    parser.add_argument("--first-repeats", type=int,
                        help="runs of each warm first snapshot (default 3)")
    parser.add_argument("--cold-repeats", type=int, help="runs of each cold step (default 3)")
    parser.add_argument("--workdir", help="where trees and stores go (default: a temp dir in /tmp)")
    parser.add_argument("--keep", action="store_true",
                        help="keep the workdir (trees are reused by the next run with it)")
    parser.add_argument("--python", default=sys.executable,
                        help="interpreter the CLI runs with; its sibling `undostore` script is "
                             "used too (e.g. a venv with a non-editable install). Default: this "
                             "one")
    parser.add_argument("--real-tree", metavar="PATH",
                        help="a real tree for the watchman-real and real-tree cases (e.g. an npm "
                             "project with node_modules/, a C project with its build outputs); "
                             "its files are rewritten and put back in one-change")
    parser.add_argument("--tar-made", action="store_true",
                        help="the c-project and real-tree cases on a copy of the tree extracted "
                             "from a tar (whole-second mtimes, as a release tarball leaves them)")
    parser.add_argument("--note", action="append", default=[],
                        help="a note printed with the results (e.g. 'loaded machine')")
    args = parser.parse_args(argv)
    wanted = args.cases.split(",") if args.cases else list(QUICK_CASES if args.quick else CASES)
    unknown = [c for c in wanted if c not in CASES]
    if unknown:
        parser.error(f"unknown case(s) {', '.join(unknown)}; choose from {', '.join(CASES)}")
    args.cases = wanted
    args.repeats = args.repeats or (2 if args.quick else 5)
    args.first_repeats = args.first_repeats or (1 if args.quick else 3)
    args.cold_repeats = args.cold_repeats or (2 if args.quick else 3)
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if shutil.which("git") is None:
        print("bench_snapshot: git is needed as the reference and was not found", file=sys.stderr)
        return 1
    if not os.path.isfile(args.python):
        print(f"bench_snapshot: --python {args.python}: no such interpreter", file=sys.stderr)
        return 1
    started_load = common.load_average()
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    source = common.source_digest([os.path.join(repo, "undostore"), os.path.join(repo, "cli")])
    workdir = args.workdir or tempfile.mkdtemp(prefix="undostore-bench-", dir="/tmp")
    os.makedirs(workdir, exist_ok=True)
    home = os.path.join(workdir, "home")
    shutil.rmtree(home, ignore_errors=True)
    os.makedirs(home)
    pycache = os.path.join(workdir, "pycache")
    # Walk cases measure the walk: a watchman daemon some other program started must not turn
    # them into watchman runs (the watchman cases set their own daemon and mode).
    env = common.isolated_env(home, pycache_prefix=pycache, extra={"UNDOSTORE_FSMONITOR": "off"})
    os.environ.clear()
    os.environ.update(env)  # the in-process library runs (threads) see the same isolation
    shutil.rmtree(os.path.join(workdir, "state"), ignore_errors=True)
    bench = Bench(workdir, args.repeats, args.first_repeats, args.cold_repeats, args.keep, env,
                  notes=list(args.note), python=os.path.abspath(args.python),
                  real_tree=args.real_tree, tar_made=args.tar_made)
    warm_bytecode(bench)
    bench.notes.append(f"Python children keep bytecode in {pycache} (PYTHONPYCACHEPREFIX), "
                       "as an installed package would; PYTHONDONTWRITEBYTECODE is removed")
    if {"20k-cold", "threads"} & set(args.cases):
        bench.cold_problem = common.cold_cache_status()
    runners = {"20k": lambda: case_tree_20k(bench, False),
               "20k-cold": lambda: case_tree_20k(bench, True),
               "threads": lambda: case_threads(bench), "100k": lambda: case_100k(bench),
               "big-file": lambda: case_big_file(bench),
               "node-modules": lambda: case_node_modules(bench),
               "startup": lambda: case_startup(bench), "floor": lambda: case_floor(bench),
               "profile": lambda: case_profile(bench),
               "watchman-20k": lambda: case_watchman(bench, "watchman-20k"),
               "watchman-100k": lambda: case_watchman(bench, "watchman-100k"),
               "watchman-1m": lambda: case_watchman(bench, "watchman-1m"),
               "watchman-real": lambda: case_watchman(bench, "watchman-real"),
               "c-project": lambda: case_walk_tree(bench, "c-project"),
               "real-tree": lambda: case_walk_tree(bench, "real-tree"),
               "profile-c": lambda: case_profile_c(bench),
               "frozen-20k": lambda: case_frozen(bench),
               "per-prompt": lambda: case_per_prompt(bench),
               "resident": lambda: case_resident(bench)}
    try:
        for case in args.cases:
            runners[case]()
    finally:
        if not args.keep:
            remove_workdir(workdir, created=not args.workdir)
    if common.source_digest([os.path.join(repo, "undostore"),
                             os.path.join(repo, "cli")]) != source:
        bench.notes.append("the undostore source changed during this run (others were editing "
                           "it): runs may have measured different code")
    meta = machine_meta(started_load, bench.python, source)
    meta["cases"] = ",".join(args.cases)
    meta["repeats (warm fast / warm first / cold)"] = (
        f"{args.repeats} / {args.first_repeats} / {args.cold_repeats}")
    text = report(bench, meta)
    print(text)
    os.makedirs(RESULTS_DIR, exist_ok=True)
    out = os.path.join(RESULTS_DIR, time.strftime("snapshot-%Y%m%d-%H%M%S.json", time.gmtime()))
    with open(out, "w", encoding="utf-8") as f:
        json.dump({"meta": meta, "notes": bench.notes, "mismatches": bench.mismatches,
                   "rows": [{**asdict(r), "ratio": r.ratio, "passed": r.passed}
                            for r in bench.rows],
                   "details": bench.details, "summaries": bench.summaries, "markdown": text},
                  f, indent=1, default=str)
    print(f"results written to {out}", file=sys.stderr)
    return 1 if bench.mismatches else 0


if __name__ == "__main__":
    sys.exit(main())
