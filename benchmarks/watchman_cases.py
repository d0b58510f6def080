"""Snapshot cases with change detection: the walk (UNDOSTORE_FSMONITOR=off) against watchman
(a private daemon this benchmark starts), both against git in the same interleaved run.

Cases `watchman-20k` and `watchman-100k` of bench_snapshot.py:
- CLI: `undostore snapshot --json` as a child process, first / no-change / one-change, with the
  child's peak RSS (`/usr/bin/time`) on the no-change and one-change steps; git likewise.
- in-process: `Workspace.snapshot()` in this process, same steps, median seconds and the
  peak of Python allocations (tracemalloc; not RSS: the interpreter itself is not counted).
- first snapshot with watchman: the watch is deleted before each first snapshot, so it pays
  watchman's crawl of the tree (`watch-project`), as a user's very first snapshot would.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
import tracemalloc
from statistics import median

import common

WALK_MODES = ("off", "watchman")


class PrivateWatchman:
    """A watchman daemon with its own socket, state and log in the benchmark's workdir."""

    def __init__(self, folder: str) -> None:
        self.folder = folder
        self.sock = os.path.join(folder, "sock")
        self.process: subprocess.Popen | None = None

    def _cli(self, *args: str) -> subprocess.CompletedProcess:
        return subprocess.run(["watchman", f"--sockname={self.sock}", "--no-spawn", *args],
                              capture_output=True, timeout=120, check=False)

    def start(self) -> None:
        os.makedirs(self.folder, exist_ok=True)
        log = open(os.path.join(self.folder, "out"), "ab")  # noqa: SIM115 (the child keeps it)
        self.process = subprocess.Popen(
            ["watchman", "--foreground", f"--sockname={self.sock}",
             f"--statefile={os.path.join(self.folder, 'state')}",
             f"--logfile={os.path.join(self.folder, 'log')}",
             f"--pidfile={os.path.join(self.folder, 'pid')}", "--no-save-state",
             "--log-level=0"], stdin=subprocess.DEVNULL, stdout=log, stderr=log,
            start_new_session=True)
        log.close()
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if self._cli("version").returncode == 0:
                return
            time.sleep(0.1)
        raise RuntimeError("private watchman daemon did not start")

    def forget(self, tree: str) -> None:
        """Drop the watch, so the next snapshot pays watchman's crawl again."""
        self._cli("watch-del", tree)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(20)
            except subprocess.TimeoutExpired:
                self.process.kill()


def available() -> str | None:
    """Why the watchman cases cannot run here, or None."""
    if shutil.which("watchman") is None:
        return "no watchman program (Debian: apt-get install watchman)"
    try:
        import pywatchman  # noqa: F401
    except ImportError:
        return "pywatchman is not installed (pip install 'undostore[watchman]')"
    return None


def walk_env(env: dict[str, str], mode: str, daemon: PrivateWatchman) -> dict[str, str]:
    return {**env, "UNDOSTORE_FSMONITOR": mode, "WATCHMAN_SOCK": daemon.sock}


def in_process(tree: str, store: str, mode: str, daemon: PrivateWatchman, rewriter,  # noqa: ANN001
               repeats: int, round_base: int) -> dict[str, dict[str, float]]:
    """Median seconds and peak traced MB of the library's snapshot in this process."""
    from undostore import Workspace

    saved = {k: os.environ.get(k) for k in ("UNDOSTORE_FSMONITOR", "WATCHMAN_SOCK")}
    os.environ.update(UNDOSTORE_FSMONITOR=mode, WATCHMAN_SOCK=daemon.sock)
    out: dict[str, dict[str, float]] = {}
    ids: set[str] = set()
    walks: set[str] = set()

    def snap(measure: bool) -> tuple[float, float]:
        if measure:
            tracemalloc.start()
        started = time.perf_counter()
        with Workspace(tree, store=store) as ws:
            result = ws.snapshot()
        seconds = time.perf_counter() - started
        peak = tracemalloc.get_traced_memory()[1] / common.MB if measure else float("nan")
        if measure:
            tracemalloc.stop()
        ids.add(result.id)
        walks.add(result.walk)
        return seconds, peak

    try:
        snap(False)   # the store's first snapshot (and the watch), not measured here
        for step in ("no-change", "one-change"):
            times, peaks = [], []
            for n in range(repeats):
                if step == "one-change":
                    rewriter.rewrite(round_base + n)
                times.append(snap(False)[0])
            if step == "one-change":
                rewriter.rewrite(round_base + repeats)
            peaks.append(snap(True)[1])
            out[step] = {"seconds": median(times), "peak_traced_mb": max(peaks)}
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
    out["walk"] = {"kinds": ",".join(sorted(walks))}  # type: ignore[dict-item]
    return out


def markdown_in_process(table: dict[str, dict[str, dict[str, float]]]) -> str:
    lines = ["| tree, walk | no-change s | one-change s | no-change peak traced MB | "
             "one-change peak traced MB | walks seen |", "|---|---:|---:|---:|---:|---|"]
    for label, steps in table.items():
        nc, oc = steps["no-change"], steps["one-change"]
        lines.append(f"| {label} | {nc['seconds']:.4f} | {oc['seconds']:.4f} | "
                     f"{nc['peak_traced_mb']:.1f} | {oc['peak_traced_mb']:.1f} | "
                     f"{steps['walk']['kinds']} |")  # type: ignore[index]
    return "\n".join(lines)
