"""A store is used only if this user made it and no one else can write it (store/trust.py),
tried as an attacker would: as root, with a second user made by the test (`useradd`; CI runs as
root, so these run there), a home that user owns holding a store whose `lock` and `oplog` are
links to root's files, a symlinked store, a group-writable one. Each is refused (exit 1 naming
the path, its owner and the fix) before anything is written, not even the lock."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from undostore.store.trust import outside_profile

from .conftest import Cli

IS_ROOT = hasattr(os, "geteuid") and os.geteuid() == 0
OTHER = "undostore-other"

posix_only = pytest.mark.skipif(sys.platform == "win32", reason="POSIX owners and modes")
needs_root = pytest.mark.skipif(
    sys.platform == "win32" or not IS_ROOT or shutil.which("useradd") is None,
    reason="needs root and useradd (a second user)")


def other_uid() -> int:
    """The uid of a second user, made once (`useradd`)."""
    import pwd

    try:
        return pwd.getpwnam(OTHER).pw_uid
    except KeyError:
        subprocess.run(["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin",
                        OTHER], check=True, capture_output=True)
        return pwd.getpwnam(OTHER).pw_uid


def chown_all(path: Path, uid: int) -> None:
    for folder, dirs, files in os.walk(path):
        os.lchown(folder, uid, uid)
        for name in dirs + files:
            os.lchown(os.path.join(folder, name), uid, uid)


def store_of(home: Path) -> Path:
    (store,) = (home / "stores").iterdir()
    return store


def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    (root / "a.txt").write_text("a\n")
    return root


def run(root: Path, home: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "UNDOSTORE_HOME": str(home), "UNDOSTORE_FSMONITOR": "off"}
    env.pop("UNDOSTORE_STORE", None)
    return Cli().run(*args, cwd=root, env=env)


@needs_root
def test_root_never_writes_through_a_store_another_user_planted(tmp_path: Path):
    uid = other_uid()
    root = project(tmp_path)
    home = tmp_path / "shared-home"
    assert run(root, home, "snapshot", "-s", "s").returncode == 0   # root's own store, first
    victim = tmp_path / "rootonly"
    victim.mkdir(mode=0o700)
    precious = victim / "precious.conf"
    precious.write_text("root's settings\n")
    script = victim / "job.sh"
    script.write_text("#!/bin/sh\necho hi\n")
    # The other user takes the home over (as a shared folder lets them) and plants links.
    store = store_of(home)
    chown_all(home, uid)
    for name, target in (("lock", precious), ("oplog", script)):
        (store / name).unlink(missing_ok=True)
        os.symlink(target, store / name)
        os.lchown(store / name, uid, uid)
    before = {p: p.read_bytes() for p in (precious, script)}

    for args in (("snapshot", "-s", "s", "--label", "$(touch PWNED)"), ("log", "-s", "s"),
                 ("undo", "-s", "s", "--yes"), ("status",)):
        done = run(root, home, *args)
        assert done.returncode == 1, (args, done.stderr)
        assert f"belongs to {OTHER} (uid {uid}), not to root (uid 0)" in done.stderr, args
        assert str(home) in done.stderr
    assert {p: p.read_bytes() for p in (precious, script)} == before
    assert not (root / "PWNED").exists()


@needs_root
def test_a_forged_store_in_a_folder_another_user_owns_is_refused(tmp_path: Path):
    uid = other_uid()
    root = project(tmp_path)
    store = tmp_path / "forged"
    store.mkdir()
    (store / "FORMAT").write_text("undostore store 1\nid: 00\nroot: \n")
    chown_all(store, uid)
    done = Cli().run("--store", str(store), "snapshot", "--json", cwd=root)
    assert done.returncode == 1
    error = json.loads(done.stdout)["error"]
    assert error["path"] == str(store) and "belongs to" in error["message"]
    assert sorted(os.listdir(store)) == ["FORMAT"]   # not even a lock was made


@posix_only
def test_a_symlinked_or_group_writable_store_is_refused(tmp_path: Path):
    root = project(tmp_path)
    home = tmp_path / "home"
    assert run(root, home, "snapshot").returncode == 0
    store = store_of(home)
    elsewhere = tmp_path / "elsewhere"
    store.rename(elsewhere)
    os.symlink(elsewhere, store)
    done = run(root, home, "snapshot")
    assert done.returncode == 1 and "is a symbolic link" in done.stderr
    assert str(store) in done.stderr
    store.unlink()
    elsewhere.rename(store)
    (store / "sessions").chmod(0o770)
    done = run(root, home, "snapshot")
    assert done.returncode == 1 and "writable by others (mode 770)" in done.stderr
    assert "chmod go-w" in done.stderr and str(store / "sessions") in done.stderr
    (store / "sessions").chmod(0o700)
    assert run(root, home, "snapshot").returncode == 0


def test_only_a_windows_store_outside_the_profile_is_named():
    """Windows has no owner or mode bits to check: a store outside the profile is named."""
    profile = str(Path("/users/me").absolute())
    inside = str(Path(profile, ".undostore", "stores", "x"))
    outside = str(Path("/shared/stores/x").absolute())
    assert outside_profile(inside, windows=True, profile=profile) is None
    assert outside_profile(profile, windows=True, profile=profile) is None
    assert outside_profile(profile + "-other", windows=True, profile=profile) is not None
    note = outside_profile(outside, windows=True, profile=profile)
    assert note is not None and outside in note and profile in note
    assert outside_profile(outside, windows=False, profile=profile) is None


def test_a_store_outside_the_profile_is_named_on_stderr_on_windows(tmp_path: Path):
    """The CLI and the hook say it once per run on Windows; a store in the profile (the default
    here: the tests' profile holds UNDOSTORE_HOME) is never named, nor anything on POSIX."""
    root = project(tmp_path)
    shared = tmp_path / "shared-store"
    named = Cli().run("--store", str(shared), "snapshot", cwd=root)
    assert named.returncode == 0, named.stderr
    event = json.dumps({"session_id": "s", "cwd": str(root), "hook_event_name": "UserPromptSubmit",
                        "prompt": "p"})
    hook = Cli().run("--store", str(shared), "hook", cwd=root, input=event)
    assert hook.returncode == 0, hook.stderr
    default = Cli().run("snapshot", cwd=root)
    assert default.returncode == 0 and "outside your user profile" not in default.stderr
    for done in (named, hook):
        if sys.platform == "win32":
            assert "outside your user profile" in done.stderr and str(shared) in done.stderr
        else:
            assert "outside your user profile" not in done.stderr
