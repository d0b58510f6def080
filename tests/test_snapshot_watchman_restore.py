"""A restore and then a snapshot through a real (private) watchman daemon: the restore keeps the
safety snapshot's clock and records what it wrote, and the next snapshot patches the folders it
touched instead of walking; racy names (kept with their mode only) are patched too. Every id is
git's, including after writes by someone else during the restore."""

from __future__ import annotations

import os
import random
import shutil
import sys
import time
from pathlib import Path

import pytest

from undostore import Workspace
from undostore.limits import Limits
from undostore.snapshot import changes, walk
from undostore.snapshot.snapshot import SnapshotOptions
from undostore.store.statcache import StatCache, mode_only_entry

from .conftest import make_tree
from .watchman_daemon import expect_watchman, used_watchman

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="no watchman on Windows")


@pytest.fixture
def read_whole(monkeypatch) -> list[str]:
    """The folders a watchman-driven snapshot reads whole (the real reader, recorded)."""
    seen: list[str] = []
    real = walk.read_folder

    def recording(root, item, options):  # noqa: ANN001, ANN202
        seen.append(item.path)
        return real(root, item, options)

    monkeypatch.setattr(changes, "read_folder", recording)   # a folder watchman named
    monkeypatch.setattr(walk, "read_folder", recording)      # and those below a new one
    return seen


@pytest.fixture
def cached_restores(limits) -> Limits:
    """Limits with which every restore loads the stat cache and records what it wrote (as a
    large one does)."""
    return limits._replace(restore_hash_at_most=0)


def _grid(root: Path, folders: int, files: int) -> Path:
    return make_tree(root, {".gitignore": "*.log\n", **{
        f"d{i:02}": {f"f{j:02}.txt": f"{i} {j}\n" for j in range(files)}
        for i in range(folders)}})


def _snap(ws: Workspace):
    warnings: list[tuple[str, str]] = []
    result = ws.snapshot(options=SnapshotOptions(on_warning=lambda p, m: warnings.append((p, m))))
    return result._replace(warnings=warnings)


def _record(store: Path, identity: str, folder: str):
    return StatCache.load(str(store / "cache" / "statcache"), identity).records[folder]


def test_a_large_restore_then_a_snapshot_patches_instead_of_walking(tmp_path, git, watchman_env,
                                                                    cached_restores, read_whole):
    root = _grid(tmp_path / "root", folders=30, files=20)
    with Workspace(root, store=tmp_path / "store", limits=cached_restores) as ws:
        a = _snap(ws)
        for i in range(30):
            for j in range(5):
                (root / f"d{i:02}" / f"f{j:02}.txt").write_text(f"changed {i} {j}\n")
        make_tree(root / "extra", {"x.txt": "x", "sub": {"y.txt": "y"}})
        (root / "d03" / "new.txt").write_text("new")
        b = _snap(ws)
        replaced = []

        def pause_once(what: str, path: str) -> None:  # written files leave the racy window
            if what == "replace":
                replaced.append(path)
                if len(replaced) == 120:
                    time.sleep(0.1)

        ws.checkpoint = pause_once
        ws.restore(a.id)
        ws.checkpoint = None
        assert len(replaced) == 150
        del read_whole[:]
        after = _snap(ws)
        expect_watchman(after)
        assert read_whole == []
        assert after.id == a.id == git.write_tree(root)
        assert after.files == a.files
        assert after.hashed <= 40   # the files written before the pause are trusted
        # And back: the folders the restore made are built from what it recorded (only the
        # root, where a new folder appeared, is read whole), their files trusted by stat.
        ws.restore(b.id)
        del read_whole[:]
        after = _snap(ws)
        expect_watchman(after)
        assert after.id == b.id == git.write_tree(root)
        assert sorted(read_whole) == [""]
        assert _snap(ws).hashed == 0


def test_racy_entries_kept_as_modes_are_patched_not_read_whole(tmp_path, git, watchman_env,
                                                               read_whole, limits):
    root = make_tree(tmp_path / "root", {
        "big": {f"f{i:04}.txt": f"{i}\n" for i in range(2000)}, "other": {"x": "x"}})
    with Workspace(root, store=tmp_path / "store", limits=limits) as ws:
        time.sleep(0.1)
        _snap(ws)
        future = time.time_ns() + 5 * 10**9      # racy for the next snapshot, whatever its pace
        for name in ("f0001.txt", "f1999.txt", "zz-new.txt"):
            (root / "big" / name).write_text("racy " + name)
            os.utime(root / "big" / name, ns=(future, future))
        first = _snap(ws)
        assert first.id == git.write_tree(root)
        cache = StatCache.load(str(tmp_path / "store" / "cache" / "statcache"), ws.store.identity)
        # Entries listed by name: not carried whole.
        assert cache.records["big"].entry_names is not None
        racy = cache.entries_in("big")["zz-new.txt"]
        assert racy == mode_only_entry(racy.git_mode, racy.blob_id)   # only its mode kept
        (root / "big" / "f0500.txt").write_text("changed")
        (root / "other" / "y").write_text("y")
        del read_whole[:]
        result = _snap(ws)
        expect_watchman(result)
        assert read_whole == []
        assert result.id == git.write_tree(root) and result.files == 2003
        assert result.hashed == 5     # the three left out, the one changed, the new one
        # A racy file deleted meanwhile, and nothing reported in its folder's parent.
        (root / "big" / "f1999.txt").unlink()
        result = _snap(ws)
        expect_watchman(result)
        assert read_whole == []
        assert result.id == git.write_tree(root) and result.files == 2002


def test_writes_by_someone_else_during_a_restore_are_seen_next(tmp_path, git, watchman_env,
                                                               cached_restores):
    root = _grid(tmp_path / "root", folders=6, files=10)
    make_tree(root, {"keep.txt": "untouched", "quiet": {"q.txt": "quiet"}})
    with Workspace(root, store=tmp_path / "store", limits=cached_restores) as ws:
        a = _snap(ws)
        for i in range(6):
            for j in range(5):
                (root / f"d{i:02}" / f"f{j:02}.txt").write_text(f"B {i} {j}\n")
        _snap(ws)
        replaced: list[str] = []

        def meddle(what: str, path: str) -> None:
            if what != "replace":
                return
            replaced.append(path)
            if len(replaced) != 30:
                return
            time.sleep(0.1)   # what was written so far is out of the racy window: recorded
            # A file the restore wrote first, same size, mtime put back: only its ctime differs.
            early = root / replaced[0]
            st = early.stat()
            early.write_text("X" * st.st_size)
            os.utime(early, ns=(st.st_atime_ns, st.st_mtime_ns))
            (root / "d01" / "f09.txt").write_text("untouched by the restore, in its folder")
            (root / "keep.txt").write_text("changed meanwhile")
            (root / "quiet" / "q.txt").write_text("changed meanwhile")
            (root / "d02" / "f08.txt").unlink()
            (root / "d03" / "late.txt").write_text("created meanwhile")
            (root / "d04" / "fresh").mkdir()
            (root / "d04" / "fresh" / "z").write_text("z")

        ws.checkpoint = meddle
        ws.restore(a.id)
        ws.checkpoint = None
        assert len(replaced) == 30
        result = _snap(ws)
        expect_watchman(result)
        assert result.id == git.write_tree(root) != a.id
        assert (root / replaced[0]).read_text().startswith("XXX")


def test_a_file_changed_after_a_restore_keeping_its_mtime_is_seen(tmp_path, git, watchman_env,
                                                                  cached_restores):
    root = _grid(tmp_path / "root", folders=3, files=4)
    with Workspace(root, store=tmp_path / "store", limits=cached_restores) as ws:
        a = _snap(ws)
        (root / "d00" / "f00.txt").write_text("other\n")
        _snap(ws)
        ws.restore(a.id)
        time.sleep(0.1)
        path = root / "d00" / "f00.txt"
        st = path.stat()
        path.write_text("Q" * st.st_size)
        os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
        result = _snap(ws)
        expect_watchman(result)
        assert result.id == git.write_tree(root) != a.id


def test_a_gitignore_written_by_the_restore_means_a_full_walk(tmp_path, git, watchman_env,
                                                              cached_restores):
    root = _grid(tmp_path / "root", folders=3, files=4)
    with Workspace(root, store=tmp_path / "store", limits=cached_restores) as ws:
        a = _snap(ws)
        (root / ".gitignore").write_text("*.log\n*.old\n")
        (root / "d01" / "f00.txt").write_text("changed")
        b = _snap(ws)
        assert b.walk == "full" and b.id == git.write_tree(root)
        (root / "d02" / "x.old").write_text("ignored now, kept once the restore is done")
        ws.restore(a.id)   # writes .gitignore back: x.old is kept from now on
        result = _snap(ws)
        assert result.walk == "full" and result.id == git.write_tree(root) != a.id
        expect_watchman(_snap(ws))


def test_a_created_file_the_rules_now_ignore_stays_out(tmp_path, git, watchman_env,
                                                       cached_restores):
    root = _grid(tmp_path / "root", folders=2, files=3)
    with Workspace(root, store=tmp_path / "store", limits=cached_restores) as ws:
        (root / "d00" / "later.tmp").write_text("kept when snapshot a was taken")
        a = _snap(ws)
        (root / "d00" / "later.tmp").unlink()
        (root / "d00" / "f00.txt").write_text("changed")
        _snap(ws)
        # The global excludes change: the next snapshot walks in full and saves the new rules.
        excludes = Path(os.environ["XDG_CONFIG_HOME"]) / "git" / "ignore"
        excludes.parent.mkdir(parents=True, exist_ok=True)
        excludes.write_text("*.tmp\n")
        assert _snap(ws).walk == "full"
        ws.restore(a.id)                  # creates later.tmp, which git ignores now
        assert (root / "d00" / "later.tmp").exists()
        result = _snap(ws)
        expect_watchman(result)
        assert result.id == git.write_tree(root) != a.id


@pytest.mark.parametrize("walk", ["watchman", "full"])
def test_a_file_in_a_new_folder_the_rules_now_ignore_stays_out(tmp_path, git, watchman_env,
                                                              cached_restores, monkeypatch, walk):
    """A folder the restore creates is recorded with its files as entries only: the next
    snapshot still asks today's rules about each (and the walk without watchman too)."""
    root = _grid(tmp_path / "root", folders=2, files=3)
    with Workspace(root, store=tmp_path / "store", limits=cached_restores) as ws:
        make_tree(root / "made", {"keep.txt": "k", "later.tmp": "t", "sub": {"deep.tmp": "d"}})
        a = _snap(ws)
        import shutil
        shutil.rmtree(root / "made")
        _snap(ws)
        excludes = Path(os.environ["XDG_CONFIG_HOME"]) / "git" / "ignore"
        excludes.parent.mkdir(parents=True, exist_ok=True)
        excludes.write_text("*.tmp\n")
        assert _snap(ws).walk == "full"
        ws.restore(a.id)                  # makes `made`, with files git ignores now
        assert (root / "made" / "sub" / "deep.tmp").exists()
        if walk == "full":
            monkeypatch.setenv("UNDOSTORE_FSMONITOR", "off")
        result = _snap(ws)
        if walk == "watchman":
            expect_watchman(result)
        else:
            assert result.walk == walk
        assert result.id == git.write_tree(root) != a.id


def test_a_restore_across_most_folders_patches_them_all(tmp_path, git, watchman_env,
                                                        cached_restores, read_whole):
    root = _grid(tmp_path / "root", folders=80, files=6)
    with Workspace(root, store=tmp_path / "store", limits=cached_restores) as ws:
        a = _snap(ws)
        for i in range(75):
            (root / f"d{i:02}" / "f00.txt").write_text(f"changed {i}\n")
        _snap(ws)
        ws.restore(a.id)
        del read_whole[:]
        result = _snap(ws)
        expect_watchman(result)
        assert read_whole == []
        assert result.id == a.id == git.write_tree(root)


def test_random_restores_and_edits_match_git_at_every_step(tmp_path, git, watchman_env,
                                                           cached_restores):
    rng = random.Random(4321)
    root = _grid(tmp_path / "root", folders=4, files=3)
    ids: list[str] = []
    with Workspace(root, store=tmp_path / "store", limits=cached_restores) as ws:
        # Some restored files leave the racy window before the restore records them: their
        # stat is then trusted, and an edit after the restore must still show.
        ws.checkpoint = lambda what, path: (
            time.sleep(0.06) if what == "replace" and rng.random() < 0.2 else None)
        ids.append(_snap(ws).id)
        for step in range(40):
            action = rng.choice(["edit", "edit", "restore", "restore", "racy", "tree"])
            folder = root / rng.choice(["", "d00", "d01", "d02/new", "n", "n/m"])
            if action == "restore" and len(ids) > 1:
                ws.restore(rng.choice(ids[:-1]))
                if rng.random() < 0.5:    # someone edits a restored file, keeping its mtime
                    files = sorted(p for p in root.rglob("*.txt") if p.is_file())
                    edited = rng.choice(files)
                    st = edited.stat()
                    edited.write_bytes(bytes(reversed(edited.read_bytes())) + b"!")
                    os.utime(edited, ns=(st.st_atime_ns, st.st_mtime_ns))
            elif action == "tree" and folder != root:
                shutil.rmtree(folder, ignore_errors=True)
                make_tree(folder, {f"t{step}.txt": f"{step}", "in": {"x": f"{step}"}})
            else:
                folder.mkdir(parents=True, exist_ok=True)
                target = folder / f"f{rng.randrange(6):02}.txt"
                if target.is_dir():
                    continue
                target.write_text(f"{step} {rng.random()}\n")
                if action == "racy":
                    future = time.time_ns() + 10**9
                    os.utime(target, ns=(future, future))
            result = _snap(ws)
            assert used_watchman(result), (step, action, result.walk_reason, result.warnings)
            assert result.id == git.write_tree(root), (step, action)
            ids.append(result.id)


@pytest.mark.parametrize("shape", ["folder-made-beside-an-edit", "ignored-only-folder-filled",
                                   "edits-only"])
def test_the_tree_ids_a_restore_leaves_splice_to_gits(tmp_path, git, watchman_env,
                                                      cached_restores, shape):
    """A restore leaves the target's tree id only for folders whose records then list exactly
    the target's entries (cachechoice._claimable): a folder where it made a sub-folder, or
    filled one that held only ignored files, keeps none, or the next snapshot would splice
    that sub-folder into a tree that already holds it."""
    root = _grid(tmp_path / "root", folders=2, files=3)
    (root / "d00" / "logs").mkdir()
    (root / "d00" / "logs" / "run.log").write_text("ignored")
    with Workspace(root, store=tmp_path / "store", limits=cached_restores) as ws:
        if shape == "folder-made-beside-an-edit":
            (root / "d00" / "new" / "deep").mkdir(parents=True)
            (root / "d00" / "new" / "deep" / "n.txt").write_text("n")
        elif shape == "ignored-only-folder-filled":
            (root / "d00" / "logs" / "kept.txt").write_text("k")
        a = _snap(ws)
        if shape == "folder-made-beside-an-edit":
            shutil.rmtree(root / "d00" / "new")
        elif shape == "ignored-only-folder-filled":
            (root / "d00" / "logs" / "kept.txt").unlink()
        (root / "d00" / "f00.txt").write_text("changed")
        (root / "d01" / "f01.txt").write_text("changed")
        time.sleep(0.2)
        _snap(ws)
        ws.checkpoint = lambda what, path: time.sleep(0.2) if what == "replace" else None
        ws.restore(a.id)
        ws.checkpoint = None
        time.sleep(0.2)
        (root / "d00" / "f01.txt").write_text("after the restore")
        result = _snap(ws)
        expect_watchman(result)
        assert result.id == git.write_tree(root) != a.id
        again = _snap(ws)
        assert again.id == result.id and again.hashed == 0
