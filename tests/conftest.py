"""Shared fixtures: declarative temp trees, a private store, and git as the reference oracle.

Tests that compare with git use the `git` fixture, which skips where no git program exists (the
library itself never runs git). git always runs with a private git dir and an empty config, so the
tester's own git settings cannot leak into the reference.
"""

from __future__ import annotations

import errno
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import settings

from .limits_support import limits  # noqa: F401 (a fixture)
from .watchman_daemon import watchman_daemon, watchman_env  # noqa: F401 (fixtures)

# No per-example deadline: under Wine an example of the tree-delta property once took past
# hypothesis's 200 ms (DeadlineExceeded), a timing flake, not a finding; speed is measured
# in benchmarks/, not asserted in tests.
settings.register_profile("undostore", deadline=None)
settings.load_profile("undostore")

IS_WINDOWS = sys.platform == "win32"

# A suite started as a background job of a non-interactive shell (`cmd &`, nohup) inherits
# SIGINT ignored, so Python installs no handler of its own: the Ctrl-C tests would then wait
# for a KeyboardInterrupt that never comes, and the CLI subprocesses would ignore one too.
# They test the process as a terminal starts it.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


# What starting a child under Wine now and then fails with on a loaded machine, before the
# child exists: CreateProcess's ERROR_INTERNAL_ERROR (1359) or ERROR_INVALID_HANDLE (6), and
# EBADF from the handle set-up (seen in the .ci/run of 2d58414, `undostore init` with fresh
# pipes).
_WINE_SPAWN_FLAKES = (1359, 6)


def _wine_spawn_flake(err: OSError) -> bool:
    winerror = getattr(err, "winerror", None)
    return winerror in _WINE_SPAWN_FLAKES or (winerror is None and err.errno == errno.EBADF)


class RetryingPopen(subprocess.Popen):
    """Popen that tries again when starting a child under Wine fails before it exists
    (`_wine_spawn_flake`). The failed attempt closed what it opened; the next one opens its
    own pipes. Installed in the Windows lane only (below), for every child a test starts
    (`subprocess.run` looks `Popen` up when called)."""

    def __init__(self, *args, **kwargs) -> None:  # type: ignore[no-untyped-def]
        for attempt in range(4):
            try:
                super().__init__(*args, **kwargs)
                return
            except OSError as err:
                if not _wine_spawn_flake(err) or attempt == 3:
                    raise
                time.sleep(0.05 * (attempt + 1))


if IS_WINDOWS:
    subprocess.Popen = RetryingPopen  # type: ignore[misc]


CLI = [sys.executable, "-m", "undostore"]


class Cli:
    """The undostore command as a real child process: the one runner the tests share."""

    def argv(self, *args: str, root: Path | str | None = None) -> list[str]:
        return [*CLI, *(["--root", str(root)] if root is not None else []), *args]

    def run(self, *args: str, root: Path | str | None = None,
            stdin: int | None = subprocess.DEVNULL, timeout: float = 120, text: bool = True,
            **options: object) -> subprocess.CompletedProcess:
        """Run to its end: exit code and output, as text (undecodable bytes kept as surrogates)
        unless `text` is False. `input` replaces the empty stdin; other `options` go to
        subprocess.run. The timeout only stops a hung child."""
        if options.get("input") is not None:
            stdin = None
        if text:
            options.setdefault("errors", "surrogateescape")
        return subprocess.run(self.argv(*args, root=root), capture_output=True, text=text,
                              stdin=stdin, timeout=timeout, **options)  # type: ignore[call-overload]

    def popen(self, *args: str, root: Path | str | None = None,
              **options: object) -> subprocess.Popen:
        """Start it; the caller talks to it and waits (`options` go to subprocess.Popen)."""
        return subprocess.Popen(self.argv(*args, root=root), **options)  # type: ignore[call-overload]


@pytest.fixture
def cli() -> Cli:
    return Cli()


@dataclass(frozen=True)
class Link:
    """A symlink in a declarative tree."""

    target: str


@dataclass(frozen=True)
class Exe:
    """An executable file in a declarative tree."""

    content: bytes | str


TreeSpec = Mapping[str, "bytes | str | Link | Exe | TreeSpec"]


def make_tree(root: Path | str, spec: TreeSpec) -> Path:
    """Create files from {"name": content, "dir": {...}, "l": Link("t"), "x": Exe("...")}."""
    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    for name, value in spec.items():
        path = root / name
        if isinstance(value, Mapping):
            make_tree(path, value)
        elif isinstance(value, Link):
            os.symlink(value.target, path)
        elif isinstance(value, Exe):
            data = value.content.encode() if isinstance(value.content, str) else value.content
            path.write_bytes(data)
            path.chmod(0o755)
        else:
            path.write_bytes(value.encode() if isinstance(value, str) else value)
    return root


def edit_lines(data: bytes, *changes: tuple[int, bytes | None]) -> bytes:
    """`data` with 1-based line numbers replaced (by None: deleted); the edits of the merge and
    revert tests' histories."""
    lines = data.splitlines(keepends=True)
    for number, new in sorted(changes, reverse=True):
        if new is None:
            del lines[number - 1]
        else:
            lines[number - 1] = new
    return b"".join(lines)


def write_objects(store, objects: list[tuple[int, bytes]]) -> list[str]:  # noqa: ANN001
    """Put hand-made objects, (type number, body) each, into one new pack of `store` (a Store):
    their ids, for snapshots that name what was never stored. Not fsynced (a test's store)."""
    from undostore.git.objects import TREE, hash_object
    from undostore.git.packwriter import PackWriter
    from undostore.store.recent import remember

    writer = PackWriter(store.pack_dir, durable=False)
    ids = []
    for type_num, body in objects:
        sha = hash_object(type_num, body)
        writer.add(type_num, sha, body)
        ids.append(sha.hex())
    writer.commit()
    for (type_num, _body), sha in zip(objects, ids, strict=True):
        if type_num == TREE:   # a hand-made tree stands for a snapshot handed out
            remember(store.path, bytes.fromhex(sha))
    store.refresh()
    return ids


@pytest.fixture
def tree_factory(tmp_path: Path):
    """make(spec) -> a fresh root folder under tmp_path holding `spec`."""
    counter = iter(range(10**6))

    def make(spec: TreeSpec) -> Path:
        return make_tree(tmp_path / f"root{next(counter)}", spec)

    return make


@pytest.fixture(autouse=True)
def _isolated_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):  # noqa: ANN202
    """Never touch the tester's real ~/.undostore, git config or global excludes.

    The CLI and hook processes a test starts run in their own process
    (`UNDOSTORE_RESIDENT=off`): each test's home would otherwise keep a resident process for
    ten idle minutes. The default (on) is run by tests/test_resident.py and by the real hosts,
    whose environment (host_support.host_env) does not carry this setting; whatever resident
    process a test's home started is stopped after it."""
    home = tmp_path / "_home"
    home.mkdir()
    monkeypatch.setenv("UNDOSTORE_HOME", str(home / ".undostore"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("USERPROFILE", str(home))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.setenv("UNDOSTORE_RESIDENT", "off")
    monkeypatch.delenv("UNDOSTORE_STORE", raising=False)
    monkeypatch.delenv("UNDOSTORE_SESSION", raising=False)
    monkeypatch.delenv("GIT_CONFIG_GLOBAL", raising=False)
    # Never the tester's own watchman daemon: `auto` finds no socket here and walks. Tests that
    # want watchman use `watchman_env` (a private daemon, tests/watchman_daemon.py).
    monkeypatch.setenv("WATCHMAN_SOCK", str(home / "no-watchman.sock"))
    monkeypatch.delenv("UNDOSTORE_FSMONITOR", raising=False)
    yield
    stop_resident(home / ".undostore")


def stop_resident(undostore_home: Path) -> None:
    """End the resident process serving `undostore_home`, if one runs (its pid from
    run/resident.json, checked against its command line)."""
    import json

    try:
        pid = int(json.loads((undostore_home / "run" / "resident.json").read_text())["pid"])
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            if b"undostore_cli.resident.serve" not in f.read():
                return
        os.kill(pid, signal.SIGTERM)
    except (OSError, ValueError, KeyError, TypeError):
        return


class Git:
    """The git program, run with a private git dir: the reference for ids, ignores and diffs."""

    def __init__(self, exe: str) -> None:
        self.exe = exe

    def env(self, git_dir: Path, work_tree: Path) -> dict[str, str]:
        env = dict(os.environ)
        env.update(GIT_DIR=str(git_dir), GIT_WORK_TREE=str(work_tree),
                   GIT_INDEX_FILE=str(git_dir / "index"), GIT_CONFIG_NOSYSTEM="1",
                   GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@t", GIT_COMMITTER_NAME="t",
                   GIT_COMMITTER_EMAIL="t@t", LC_ALL="C")
        return env

    def run(self, git_dir: Path, work_tree: Path, *args: str, input: bytes | None = None,
            check: bool = True) -> bytes:
        result = subprocess.run([self.exe, *args], cwd=work_tree, env=self.env(git_dir, work_tree),
                                input=input, capture_output=True)
        if check and result.returncode != 0:
            raise AssertionError(f"git {' '.join(args)} failed: {result.stderr.decode()}")
        return result.stdout

    def private_dir(self, work_tree: Path) -> Path:
        """A git dir outside the tree, initialised with core settings that keep bytes raw."""
        git_dir = work_tree.parent / f"{work_tree.name}.gitdir"
        if not git_dir.exists():
            subprocess.run([self.exe, "init", "-q", "--bare", str(git_dir)], check=True,
                           env={**os.environ, "GIT_CONFIG_NOSYSTEM": "1"})
            for key, value in (("core.autocrlf", "false"), ("core.filemode", "true"),
                               ("core.symlinks", "true"), ("core.bare", "false")):
                subprocess.run([self.exe, "--git-dir", str(git_dir), "config", key, value],
                               check=True)
        return git_dir

    def write_tree(self, work_tree: Path) -> str:
        """`git add -A && git write-tree` with a fresh private index over `work_tree`."""
        git_dir = self.private_dir(work_tree)
        index = git_dir / "index"
        if index.exists():
            index.unlink()
        self.run(git_dir, work_tree, "add", "-A")
        return self.run(git_dir, work_tree, "write-tree").decode().strip()

    def ls_untracked(self, work_tree: Path) -> list[str]:
        """What git would add: `ls-files -o --exclude-standard`, as sorted paths."""
        git_dir = self.private_dir(work_tree)
        out = self.run(git_dir, work_tree, "ls-files", "-o", "--exclude-standard", "-z")
        return sorted(p.decode("utf-8", "surrogateescape") for p in out.split(b"\0") if p)


@pytest.fixture(scope="session")
def git() -> Git:
    exe = shutil.which("git")
    if exe is None:
        pytest.skip("git is not installed (the reference oracle); undostore itself never needs it")
    return Git(exe)
