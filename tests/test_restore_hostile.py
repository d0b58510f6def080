"""Issue 15's attacks, each by a real unprivileged process (uid 65534, the project's owner)
against a real root restore, paused by the restore's checkpoint hook at the step the attack
aims at (so every run hits the window), plus the read-only folder as non-root.

A restore never writes outside the root, never widens access through a symlink or a hard link,
and refuses with nothing changed when it could not finish."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from undostore import Workspace
from undostore.errors import RefusedError

from .hostile_support import (
    NOBODY,
    as_nobody,
    give_away,
    hostile_project,
    needs_root,
    once,
    owned_files,
    restore_with_hook,
    rootonly_folder,
    run_as_nobody,
)

pytestmark = needs_root


@pytest.fixture
def hostile(tmp_path: Path):
    yield from hostile_project(tmp_path)


def _secret(base: Path, name: str = "secret", mode: int = 0o600) -> Path:
    path = base / name
    path.write_text("root's secret\n")
    path.chmod(mode)
    return path


def _swapped_for_a_symlink_at(ws, root: Path, target: str, step: str, path: str,
                              folder: str) -> RefusedError:
    """Restore `target` while the owner, at `step` on `path`, swaps `folder` for a symlink to
    the root-only folder beside the root; the refusal (exit 3) it must end in."""
    attack = once(step, path, lambda: as_nobody(
        f"mv {folder} {folder}.moved && ln -s ../rootonly {folder}", cwd=root))
    with pytest.raises(RefusedError) as caught:
        restore_with_hook(ws, target, attack)
    assert caught.value.exit_code == 3
    return caught.value


def test_folder_swapped_for_a_symlink_mid_restore_writes_nothing_outside(hostile) -> None:
    """Attack 1: the owner swaps `d` for a symlink to a root-only folder once `d/a0000` is gone;
    the restore still creating `d/new` stops (exit 3) and nothing lands in the root-only folder."""
    base, root, store = hostile
    rootonly = rootonly_folder(base)
    owned_files(root, {"d/new": "new file\n"})
    with Workspace(root, store) as ws:
        target = ws.snapshot().id
        os.unlink(root / "d" / "new")
        for i in range(300):
            (root / "d" / f"a{i:04d}").write_text(f"old {i}\n")
        give_away(root)
        safety = ws.snapshot().id
        assert _swapped_for_a_symlink_at(ws, root, target, "delete", "d/a0000", "d").path == "d"
        assert os.listdir(rootonly) == []
        assert os.path.islink(root / "d")
        # What the restore did before it stopped went into the real folder, now `d.moved`.
        for name in os.listdir(root / "d.moved"):
            assert name.startswith("a") or name == "new" or name.startswith(".undostore-tmp")
        # --abort refuses while `d` is a symlink, changing nothing; once the owner puts the
        # folder back it rolls back to the safety snapshot exactly.
        with pytest.raises(RefusedError):
            ws.abort_restore()
        assert os.listdir(rootonly) == []
        os.unlink(root / "d")
        os.rename(root / "d.moved", root / "d")
        assert ws.abort_restore() is not None
        assert ws.diff(safety) == []


def test_folder_swapped_before_restore_is_refused_with_nothing_changed(hostile) -> None:
    base, root, store = hostile
    rootonly = rootonly_folder(base)
    owned_files(root, {"d/new": "new file\n"})
    with Workspace(root, store) as ws:
        target = ws.snapshot().id
        os.unlink(root / "d" / "new")
        (root / "d" / "old").write_text("old\n")
        give_away(root)
        ws.snapshot()
        attack = once("journal", "", lambda: as_nobody("mv d d.moved && ln -s ../rootonly d",
                                                       cwd=root))
        with pytest.raises(RefusedError):
            restore_with_hook(ws, target, attack)
    assert os.listdir(rootonly) == []
    assert (root / "d.moved" / "old").read_text() == "old\n"


@pytest.mark.parametrize("size", [1 << 10, 8 << 20])
def test_file_swapped_for_a_symlink_before_chmod_leaves_the_target_alone(hostile, size) -> None:
    """Attack 2: the file whose exec bit the restore changes becomes a symlink to root's 0600
    secret right before the change: the secret keeps 0600 and root's ownership (exit 3)."""
    base, root, store = hostile
    secret = _secret(base)
    (root / "big").write_bytes(b"x" * size)
    (root / "big").chmod(0o755)
    give_away(root)
    with Workspace(root, store) as ws:
        target = ws.snapshot().id
        (root / "big").chmod(0o644)
        ws.snapshot()
        attack = once("before chmod", "big",
                      lambda: as_nobody(f"mv big big.old && ln -s {secret} big", cwd=root))
        with pytest.raises(RefusedError):
            restore_with_hook(ws, target, attack)
    st = os.stat(secret)
    assert stat.S_IMODE(st.st_mode) == 0o600 and st.st_uid == 0
    assert stat.S_IMODE(os.stat(root / "big.old").st_mode) == 0o644


def test_file_swapped_for_a_symlink_before_replace_replaces_the_link_not_its_target(
        hostile) -> None:
    """The rename replaces the name: a symlink put there after the checks is itself replaced,
    its target never written."""
    base, root, store = hostile
    secret = _secret(base)
    (root / "f").write_text("version A\n")
    give_away(root)
    with Workspace(root, store) as ws:
        target = ws.snapshot().id
        (root / "f").write_text("version B\n")
        ws.snapshot()
        attack = once("before replace", "f",
                      lambda: as_nobody(f"mv f f.old && ln -s {secret} f", cwd=root))
        restore_with_hook(ws, target, attack)
    assert (root / "f").read_text() == "version A\n" and not (root / "f").is_symlink()
    assert (root / "f.old").read_text() == "version B\n"
    assert secret.read_text() == "root's secret\n"
    st = os.stat(secret)
    assert stat.S_IMODE(st.st_mode) == 0o600 and st.st_uid == 0


def test_hard_link_to_an_outside_file_is_never_changed_in_place(hostile) -> None:
    """Attack 3: `ln /outside/secret link` inside the root, the target differing only by the
    exec bit: the outside file keeps its mode; the name inside gets a new inode."""
    base, root, store = hostile
    secret = _secret(base, mode=0o640)
    (root / "link").write_text("root's secret\n")
    (root / "link").chmod(0o750)
    give_away(root)
    with Workspace(root, store) as ws:
        target = ws.snapshot().id
        os.unlink(root / "link")
        os.link(secret, root / "link")
        ws.snapshot()
        ws.restore(target)
        assert ws.diff(target) == []
    st = os.stat(secret)
    assert stat.S_IMODE(st.st_mode) == 0o640 and st.st_uid == 0 and st.st_nlink == 1
    inside = os.lstat(root / "link")
    assert inside.st_ino != st.st_ino and stat.S_IMODE(inside.st_mode) == 0o750


def test_hard_linked_pair_inside_is_split_and_diff_is_clean(hostile) -> None:
    """`a` and `b` share an inode; only `a` should be executable: afterwards they are two
    inodes, `b` keeps its mode and content, and diff is clean."""
    _, root, store = hostile
    (root / "a").write_text("#!/bin/sh\necho hi\n")
    (root / "b").write_text("#!/bin/sh\necho hi\n")
    (root / "a").chmod(0o755)
    give_away(root)
    with Workspace(root, store) as ws:
        target = ws.snapshot().id
        os.unlink(root / "a")
        os.link(root / "b", root / "a")
        ws.snapshot()
        result = ws.restore(target)
        assert result.modified == ["a"]
        assert ws.diff(target) == []
    a, b = os.lstat(root / "a"), os.lstat(root / "b")
    assert a.st_ino != b.st_ino
    assert stat.S_IMODE(a.st_mode) == 0o755 and stat.S_IMODE(b.st_mode) == 0o644
    assert a.st_uid == b.st_uid == NOBODY
    assert (root / "b").read_text() == "#!/bin/sh\necho hi\n"


def test_hard_linked_file_whose_content_changes_keeps_the_other_name(hostile) -> None:
    base, root, store = hostile
    outside = base / "outside"
    (root / "f").write_text("A\n")
    give_away(root)
    with Workspace(root, store) as ws:
        target = ws.snapshot().id
        os.unlink(root / "f")
        outside.write_text("B\n")
        outside.chmod(0o600)
        os.link(outside, root / "f")
        ws.snapshot()
        ws.restore(target)
    assert outside.read_text() == "B\n" and stat.S_IMODE(outside.stat().st_mode) == 0o600
    assert (root / "f").read_text() == "A\n"


def test_restore_by_root_never_writes_through_symlinks_in_twenty_races(hostile) -> None:
    """Without a pause: the owner keeps swapping `d` and a symlink to a root-only folder while
    root restores, 20 times; whatever the timing, nothing lands outside the root."""
    base, root, store = hostile
    rootonly = rootonly_folder(base)
    owned_files(root, {f"d/n{i}": "new\n" for i in range(20)})
    import subprocess
    with Workspace(root, store) as ws:
        target = ws.snapshot().id
        for run in range(20):
            for i in range(20):
                p = root / "d" / f"n{i}"
                if p.exists():
                    p.unlink()
            racer = subprocess.Popen(
                ["setpriv", "--reuid", str(NOBODY), "--regid", str(NOBODY), "--clear-groups",
                 "sh", "-c", "for i in $(seq 25); do mv d d.x 2>/dev/null && "
                 "ln -s ../rootonly d 2>/dev/null; rm -f d 2>/dev/null; "
                 "mv d.x d 2>/dev/null; done"], cwd=root)
            try:
                ws.restore(target)
            except RefusedError:
                pass
            except Exception as err:  # noqa: BLE001 (any other refusal is fine; no escape is)
                assert "rootonly" not in str(err)
            racer.wait()
            assert os.listdir(rootonly) == [], f"run {run} wrote outside the root"
            if os.path.islink(root / "d"):
                os.unlink(root / "d")
            if os.path.isdir(root / "d.x") and not os.path.exists(root / "d"):
                os.rename(root / "d.x", root / "d")
            try:
                ws.abort_restore()
            except RefusedError:
                pass


def test_read_only_folder_as_non_root_refuses_with_nothing_changed(hostile) -> None:
    """Attack 5: as the project's owner (not root), a restore that deletes in one folder and
    rewrites a file in a read-only folder refuses before the first change: exit 3, the folder
    named, nothing deleted, nothing pending."""
    base, root, store = hostile
    store = base / "store"
    (root / "x").mkdir()
    (root / "x" / "gone").write_text("deleted by the restore\n")
    (root / "ro").mkdir()
    (root / "ro" / "f").write_text("B\n")
    give_away(root)
    with Workspace(root, store) as ws:
        before = ws.snapshot().id
        (root / "ro" / "f").write_text("A\n")
        os.unlink(root / "x" / "gone")
        target = ws.snapshot().id
        (root / "ro" / "f").write_text("B\n")
        (root / "x" / "gone").write_text("deleted by the restore\n")
        assert ws.snapshot().id == before
    give_away(root)
    give_away(store)
    (root / "ro").chmod(0o555)

    def restore_as_owner() -> int:
        with Workspace(root, store) as ws:
            try:
                ws.restore(target)
            except RefusedError as err:
                assert err.path == "ro", err
                assert "cannot be written" in err.message
                return err.exit_code
        return 0

    assert run_as_nobody(restore_as_owner) == 3
    assert (root / "x" / "gone").read_text() == "deleted by the restore\n"
    assert (root / "ro" / "f").read_text() == "B\n"
    assert os.listdir(store / "restore") == []

    def snapshot_as_owner() -> int:
        with Workspace(root, store) as ws:
            return 0 if ws.snapshot().id == before else 1

    assert run_as_nobody(snapshot_as_owner) == 0
