"""Shared set-up of the hostile tests: a project owned by an unprivileged user (uid 65534) that
root restores, the attacker's moves run as that user (setpriv), and restores run as that user in
a forked child (setuid), since this interpreter lives where uid 65534 cannot read."""

from __future__ import annotations

import dataclasses
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path

import pytest

NOBODY = 65534
IS_ROOT = hasattr(os, "geteuid") and os.geteuid() == 0

needs_root = pytest.mark.skipif(
    sys.platform == "win32" or not IS_ROOT or shutil.which("setpriv") is None,
    reason="needs root (to restore as root and to act as uid 65534) and setpriv")


def as_nobody(script: str, cwd: str | os.PathLike[str]) -> None:
    """Run `script` (sh) as uid/gid 65534 with no supplementary groups: the project's owner."""
    subprocess.run(["setpriv", "--reuid", str(NOBODY), "--regid", str(NOBODY), "--clear-groups",
                    "sh", "-c", script], cwd=cwd, check=True)


def hostile_project(tmp_path: Path):
    """For a fixture: (base, root, store): `base` is world-traversable, `root` = base/p
    belongs to uid 65534, the store is root's own, outside `base`."""
    base = Path(tempfile.mkdtemp(prefix="undostore-hostile-"))
    base.chmod(0o755)
    root = base / "p"
    root.mkdir()
    os.chown(root, NOBODY, NOBODY)
    try:
        yield base, root, tmp_path / "store"
    finally:
        shutil.rmtree(base, ignore_errors=True)


def rootonly_folder(base: Path) -> Path:
    """A folder only root may enter, beside the project: where the owner's attacks try to make a
    root restore write."""
    path = base / "rootonly"
    path.mkdir(mode=0o700)
    return path


def owned_files(root: Path, files: Mapping[str, str]) -> None:
    """Write `files` (relative path -> text; folders made as needed) under `root` and give the
    whole project to uid 65534."""
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    give_away(root)


def give_away(root: Path) -> None:
    """Every file and folder under (and including) `root` to uid/gid 65534."""
    for folder, dirs, files in os.walk(root):
        os.lchown(folder, NOBODY, NOBODY)
        for name in dirs + files:
            os.lchown(os.path.join(folder, name), NOBODY, NOBODY)


def restore_with_hook(ws, target: str, hook: Callable[[str, str], None]):
    """A root restore of `target` that calls `hook(what, path)` at each step (and before each
    change: `before delete`, `before replace`, `before chmod`)."""
    from undostore.restore.restore import restore

    wt = dataclasses.replace(ws._worktree(), checkpoint=hook)
    return restore(wt, target)


def once(what: str, path: str, action: Callable[[], None]) -> Callable[[str, str], None]:
    """A hook that runs `action` the first time the restore reaches step `what` on `path`."""
    fired: list[bool] = []

    def hook(step: str, at: str) -> None:
        if not fired and step == what and at == path:
            fired.append(True)
            action()
    return hook


def run_as_nobody(work: Callable[[], int]) -> int:
    """Run `work` in a forked child as uid/gid 65534; its return value is the exit status."""
    pid = os.fork()
    if pid == 0:
        code = 99
        try:
            os.setgroups([])
            os.setgid(NOBODY)
            os.setuid(NOBODY)
            code = work()
        except BaseException as err:  # noqa: BLE001 (reported through the exit status)
            sys.stderr.write(f"child failed: {err!r}\n")
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status)
