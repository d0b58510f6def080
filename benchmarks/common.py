"""What every benchmark shares: timed child processes with their peak memory, medians, disk usage,
dropping the page cache, and an environment that keeps the user's git and undostore settings out.

Peak memory (`run_process(..., measure_memory=True)`) comes from GNU `/usr/bin/time -f %M`. Not
from this process's own rusage of the child (`os.wait4` or `getrusage(RUSAGE_CHILDREN)`): Linux
folds the RSS of the process image that called `exec` into the child's `ru_maxrss`, and that image
is a fork of this Python process, so every child would report at least this benchmark's own RSS
(~25 MB here, a `git --version` included). `/usr/bin/time` is a small C program, so its floor is
~2 MB. Without it, the wait4 figure is used and flagged as an upper bound.
"""

from __future__ import annotations

import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

IS_WINDOWS = sys.platform == "win32"
MB = 1_000_000


@dataclass(frozen=True)
class ProcessRun:
    """One finished child process."""

    argv: tuple[str, ...]
    seconds: float
    peak_rss: int | None       # bytes, when asked for and measurable
    returncode: int
    stdout: str
    stderr: str

    def check(self) -> ProcessRun:
        """Self, or a RuntimeError naming the command, its exit code and its stderr."""
        if self.returncode != 0:
            raise RuntimeError(f"{' '.join(self.argv)} exited {self.returncode}: "
                               f"{self.stderr.strip()[-2000:]}")
        return self


def _maxrss_bytes(ru_maxrss: int) -> int:
    # Linux reports KiB, macOS bytes.
    return ru_maxrss if sys.platform == "darwin" else ru_maxrss * 1024


GNU_TIME = "/usr/bin/time"


def memory_method() -> str:
    """How `measure_memory=True` measures peak RSS on this machine."""
    if os.path.isfile(GNU_TIME):
        return f"{GNU_TIME} -f %M (floor ~2 MB)"
    if hasattr(os, "wait4"):
        return "os.wait4 rusage (upper bound: includes this benchmark's own RSS at fork)"
    return "unavailable"


def run_process(argv: Sequence[str], *, cwd: str | None = None,
                env: Mapping[str, str] | None = None,
                measure_memory: bool = False, stdin: bytes | None = None) -> ProcessRun:
    """Run `argv` to completion: wall time from spawn to reap, and with `measure_memory` its
    peak RSS (through /usr/bin/time, which adds ~1 ms; see the module docstring). `stdin`: what
    the child reads on its standard input (a hook's event), else nothing.

    Input and output go through temporary files (not pipes) so a child can never block."""
    argv = tuple(argv)
    use_time = measure_memory and os.path.isfile(GNU_TIME)
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err, \
            tempfile.TemporaryFile() as given, \
            tempfile.NamedTemporaryFile("r", suffix=".rss") as rss:
        given.write(stdin or b"")
        given.seek(0)
        spawn = (GNU_TIME, "-f", "%M", "-o", rss.name, *argv) if use_time else argv
        started = time.perf_counter()
        proc = subprocess.Popen(spawn, cwd=cwd, env=dict(env) if env is not None else None,
                                stdin=given if stdin is not None else subprocess.DEVNULL,
                                stdout=out, stderr=err)
        peak: int | None = None
        if hasattr(os, "wait4"):
            _, status, usage = os.wait4(proc.pid, 0)
            seconds = time.perf_counter() - started
            proc.returncode = os.waitstatus_to_exitcode(status)
            if measure_memory and not use_time:
                peak = _maxrss_bytes(usage.ru_maxrss)
        else:
            proc.wait()
            seconds = time.perf_counter() - started
        if use_time:
            numbers = re.findall(r"^(\d+)$", rss.read(), re.MULTILINE)
            peak = int(numbers[-1]) * 1024 if numbers else None
        out.seek(0)
        err.seek(0)
        return ProcessRun(argv, seconds, peak, proc.returncode,
                          out.read().decode("utf-8", "replace"),
                          err.read().decode("utf-8", "replace"))


def median(values: Sequence[float]) -> float:
    return statistics.median(values) if values else float("nan")


def time_call(fn: Callable[[], object]) -> float:
    """Wall seconds of one call."""
    started = time.perf_counter()
    fn()
    return time.perf_counter() - started


def median_of(fn: Callable[[], float], repeats: int,
              before_each: Callable[[], None] | None = None) -> tuple[float, list[float]]:
    """Run `fn` (which returns its own measured seconds) `repeats` times; (median, all)."""
    samples = []
    for _ in range(repeats):
        if before_each is not None:
            before_each()
        samples.append(fn())
    return median(samples), samples


@dataclass(frozen=True)
class DiskUsage:
    disk: int        # bytes of allocated blocks (st_blocks * 512): what `du` reports
    apparent: int    # sum of file sizes: what `du --apparent-size` reports
    files: int
    parts: dict[str, int] = field(default_factory=dict)   # top-level folder -> disk bytes


def dir_usage_by_part(path: str) -> DiskUsage:
    """`dir_usage(path)` plus the disk usage of each top-level sub-folder."""
    total = dir_usage(path)
    parts = {entry.name: dir_usage(entry.path).disk
             for entry in sorted(os.scandir(path), key=lambda e: e.name)
             if entry.is_dir(follow_symlinks=False)}
    return DiskUsage(total.disk, total.apparent, total.files, parts)


def dir_usage(path: str) -> DiskUsage:
    """Disk usage of a folder tree, counting each inode once and folders' own blocks too."""
    seen: set[tuple[int, int]] = set()
    disk = apparent = files = 0
    stack = [path]
    while stack:
        folder = stack.pop()
        try:
            st = os.lstat(folder)
        except FileNotFoundError:
            continue
        disk += _blocks(st)
        with os.scandir(folder) as it:
            for entry in it:
                st = entry.stat(follow_symlinks=False)
                if entry.is_dir(follow_symlinks=False):
                    stack.append(entry.path)
                    continue
                key = (st.st_dev, st.st_ino)
                if st.st_ino and key in seen:
                    continue
                seen.add(key)
                files += 1
                apparent += st.st_size
                disk += _blocks(st)
    return DiskUsage(disk, apparent, files)


def _blocks(st: os.stat_result) -> int:
    blocks = getattr(st, "st_blocks", None)
    if blocks is None:  # Windows: no block count; round up to a 4 KiB cluster
        return -(-st.st_size // 4096) * 4096
    return blocks * 512


class CacheDropUnavailable(Exception):
    """The page cache cannot be dropped here (not root, not Linux, or /proc refused)."""


def settle() -> None:
    """Write back every dirty page before a timed step (`sync`), so no step pays for the
    writeback of the one before: a first snapshot leaves ~100 MB of git's loose objects dirty,
    which the kernel writes out during the next runs of either tool."""
    if hasattr(os, "sync"):
        os.sync()


def write_like_another_program(path: str, megabytes: int) -> None:
    """`dd` writes `megabytes` MB of zeros to `path` and exits without an fsync: the pages
    stay dirty for whatever runs next, as after a build or a download."""
    run_process(["dd", "if=/dev/zero", f"of={path}", "bs=1M", f"count={megabytes}",
                 "status=none"]).check()


def drop_caches() -> None:
    """`sync; echo 3 > /proc/sys/vm/drop_caches`. Raises CacheDropUnavailable saying why not."""
    if not sys.platform.startswith("linux"):
        raise CacheDropUnavailable(
            f"dropping the page cache is Linux-only (this is {sys.platform})")
    if os.geteuid() != 0:
        raise CacheDropUnavailable(f"dropping the page cache needs root (running as uid "
                                   f"{os.geteuid()})")
    os.sync()
    try:
        with open("/proc/sys/vm/drop_caches", "w") as f:
            f.write("3\n")
    except OSError as err:
        raise CacheDropUnavailable(f"/proc/sys/vm/drop_caches: {err.strerror}") from err


def cold_cache_status() -> str | None:
    """None if the page cache can be dropped here, else the reason it cannot (tried once)."""
    try:
        drop_caches()
    except CacheDropUnavailable as err:
        return str(err)
    return None


def isolated_env(home: str, pycache_prefix: str | None = None,
                 extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """This process's environment with HOME (and git's and undostore's settings) pointing at an
    empty folder, so neither program sees the user's config, global excludes or stores.

    With `pycache_prefix`, Python children keep their bytecode there, as an installed package
    would have it: a dev shell's PYTHONDONTWRITEBYTECODE=1 would otherwise make every CLI run
    compile the project's modules from source again (tens of ms no user pays)."""
    dropped = ("XDG_CONFIG_HOME", "PYTHONDONTWRITEBYTECODE", "PYTHONPYCACHEPREFIX", "WATCHMAN_SOCK")
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("GIT_", "UNDOSTORE_")) and k not in dropped}
    if pycache_prefix:
        env["PYTHONPYCACHEPREFIX"] = pycache_prefix
    env.update(HOME=home, USERPROFILE=home, XDG_CONFIG_HOME=os.path.join(home, ".config"),
               GIT_CONFIG_NOSYSTEM="1", UNDOSTORE_HOME=os.path.join(home, ".undostore"),
               LC_ALL="C")
    env.update(extra or {})
    return env


def undostore_commands(python: str | None = None) -> dict[str, list[str]]:
    """How to start the CLI: the console script installed next to `python` (default: this
    interpreter), else the one on PATH, and `python -m undostore`."""
    python = python or sys.executable
    commands = {"python -m undostore": [python, "-m", "undostore"]}
    name = "undostore.exe" if IS_WINDOWS else "undostore"
    script = os.path.join(os.path.dirname(python), name)
    if not os.path.isfile(script):
        script = shutil.which("undostore") or ""
    if script:
        commands = {"undostore script": [script], **commands}
    return commands


def source_digest(folders: Sequence[str]) -> str:
    """A short digest of the `.py` files under `folders`: which code a result belongs to."""
    import hashlib

    digest = hashlib.sha256()
    for folder in folders:
        for name in sorted(os.listdir(folder)):
            if name.endswith(".py"):
                digest.update(name.encode())
                with open(os.path.join(folder, name), "rb") as f:
                    digest.update(f.read())
    return digest.hexdigest()[:12]


def load_average() -> str:
    try:
        return " ".join(f"{x:.2f}" for x in os.getloadavg())
    except (AttributeError, OSError):
        return "n/a"


def file_system(path: str) -> str:
    """The file system under `path`, as the kernel mounted it: "ext4 on /dev/vda (no
    journal)". An ext4 without a journal makes every create scan the inodes freed in the last
    minutes (recently_deleted), which changes restore figures; Linux only, else "unknown"."""
    try:
        with open("/proc/self/mountinfo", encoding="utf-8") as f:
            mounts = [line.split() for line in f]
    except OSError:
        return "unknown"
    real = os.path.realpath(path)
    best: list[str] | None = None
    for fields in mounts:
        point = fields[4]
        inside = real == point or real.startswith(point.rstrip("/") + "/")
        if inside and (best is None or len(point) > len(best[4])):
            best = fields
    if best is None:
        return "unknown"
    after = best[best.index("-") + 1:]
    kind, source = after[0], after[1]
    if kind != "ext4":
        return f"{kind} on {source}"
    device = os.path.basename(source)
    try:
        journaled = any(name.startswith(device + "-") for name in os.listdir("/proc/fs/jbd2"))
    except OSError:
        journaled = False
    return f"ext4 on {source} ({'journaled' if journaled else 'no journal'})"


def tool_version(argv: Sequence[str]) -> str:
    try:
        return run_process(argv).stdout.strip()
    except OSError:
        return "absent"


def fmt_seconds(value: float | None) -> str:
    if value is None or value != value:  # NaN
        return "—"
    return f"{value:.3f}" if value < 10 else f"{value:.1f}"


def fmt_mb(value: float | None) -> str:
    return "—" if value is None else f"{value / MB:.1f}"


# --- profiles --------------------------------------------------------------------------------


@dataclass(frozen=True)
class ImportCost:
    module: str
    self_us: int
    cumulative_us: int
    depth: int        # 0: imported directly by the program (or by site at start-up)


def parse_importtime(stderr: str) -> list[ImportCost]:
    """The lines `python -X importtime` writes to stderr, in order."""
    out = []
    for line in stderr.splitlines():
        if not line.startswith("import time:") or "imported package" in line:
            continue
        try:
            self_us, cumulative, name = line[len("import time:"):].split("|", 2)
            self_value, cumulative_value = int(self_us), int(cumulative)
        except ValueError:
            continue
        stripped = name.lstrip(" ")
        depth = (len(name) - len(stripped) - 1) // 2
        out.append(ImportCost(stripped.strip(), self_value, cumulative_value, depth))
    return out


def pstats_text(profile_file: str, sort: str, limit: int, shorten: Mapping[str, str]) -> str:
    """The top `limit` lines of a cProfile output file sorted by `sort`, with long folder
    prefixes replaced (`shorten`: prefix -> short name)."""
    import io
    import pstats

    buffer = io.StringIO()
    pstats.Stats(profile_file, stream=buffer).sort_stats(sort).print_stats(limit)
    text = buffer.getvalue()
    for prefix, short in sorted(shorten.items(), key=lambda kv: -len(kv[0])):
        text = text.replace(prefix, short)
    lines = [ln.rstrip() for ln in text.splitlines()]
    start = next((i for i, ln in enumerate(lines) if "ncalls" in ln), 0)
    header = [ln.strip() for ln in lines[:start] if "function calls" in ln]
    return "\n".join(header + [ln for ln in lines[start:] if ln.strip()])
