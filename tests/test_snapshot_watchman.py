"""Snapshots driven by a real (private) watchman daemon give git's id after every kind of change,
and fall back to a full walk whenever they cannot be sure."""

from __future__ import annotations

import os
import random
import shutil
import signal
import sys
import time
from pathlib import Path

import pytest

from undostore import Workspace
from undostore.limits import Limits
from undostore.snapshot.snapshot import SnapshotOptions

from .conftest import Exe, Link, make_tree
from .watchman_daemon import expect_watchman, used_watchman

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="no watchman on Windows")


class Snapper:
    """Snapshots of one root into one store, recording each result and its warnings."""

    def __init__(self, root: Path, store: Path, limits: Limits) -> None:
        self.root = root
        self.store = store
        self.limits = limits
        self.warnings: list[tuple[str, str]] = []

    def __call__(self, **options):
        opts = SnapshotOptions(on_warning=lambda p, m: self.warnings.append((p, m)), **options)
        with Workspace(self.root, store=self.store, limits=self.limits) as ws:
            return ws.snapshot(options=opts)


@pytest.fixture
def snapper(tmp_path, watchman_env, limits):
    root = make_tree(tmp_path / "root", {
        "README": "hello\n", "run.sh": Exe("#!/bin/sh\n"), ".gitignore": "*.log\nbuild/\n",
        "src": {"a.py": "a = 1\n", "b.py": "b = 2\n", "deep": {"c.py": "c\n", "d.txt": "d"}},
        "docs": {"guide.md": "# guide\n", "img": {"x.bin": b"\0\1\2"}},
        "link": Link("src/a.py"), "build": {"out.o": "o"}, "app.log": "log",
    })
    return Snapper(root, tmp_path / "store", limits=limits)


def _indexed(git, root: Path) -> int:
    """Files in git's index after `git.write_tree(root)`."""
    out = git.run(git.private_dir(root), root, "ls-files", "-z")
    return len([p for p in out.split(b"\0") if p])


def _full_id(root: Path, tmp_path: Path) -> str:
    """The id a fresh store with a plain walk gives: the reference for cases git cannot see."""
    old = os.environ.get("UNDOSTORE_FSMONITOR")
    os.environ["UNDOSTORE_FSMONITOR"] = "off"
    try:
        store = tmp_path / f"ref-{random.randrange(10**9)}"
        with Workspace(root, store=store) as ws:
            return ws.snapshot().id
    finally:
        os.environ["UNDOSTORE_FSMONITOR"] = old or ""
        shutil.rmtree(tmp_path / store, ignore_errors=True)


def test_first_walks_then_no_change_asks_watchman_and_reads_nothing(snapper, git):
    first = snapper()
    assert first.walk == "full"
    assert first.walk_reason == "no watchman clock saved with the stat cache"
    again = snapper()
    assert (again.walk, again.walk_reason) == ("watchman", "")
    assert again.id == first.id == git.write_tree(snapper.root)
    assert again.hashed == 0 and again.files == first.files
    assert snapper.warnings == []


def _append(root: Path) -> None:
    with open(root / "src" / "a.py", "a") as f:
        f.write("more = 3\n")


def _same_size_old_mtime(root: Path) -> None:
    path = root / "src" / "deep" / "c.py"
    st = path.stat()
    path.write_text("C\n")
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))


def _delete(root: Path) -> None:
    (root / "docs" / "guide.md").unlink()


def _rename_file(root: Path) -> None:
    (root / "src" / "b.py").rename(root / "docs" / "b_moved.py")


def _rename_folder(root: Path) -> None:
    (root / "src" / "deep").rename(root / "src" / "deeper")


def _new_folders(root: Path) -> None:
    make_tree(root / "pkg", {"x": {"y": {"z.txt": "z"}, "w.txt": "w"}, "empty": {}})


def _retarget_link(root: Path) -> None:
    (root / "link").unlink()
    os.symlink("README", root / "link")


def _exec_flip(root: Path) -> None:
    (root / "run.sh").chmod(0o644)
    (root / "README").chmod(0o755)


def _delete_folder(root: Path) -> None:
    shutil.rmtree(root / "docs" / "img")


def _folder_becomes_file(root: Path) -> None:
    shutil.rmtree(root / "pkg" / "x")
    (root / "pkg" / "x").write_text("now a file")


def _ignored_only(root: Path) -> None:
    (root / "build" / "more.o").write_text("o2")
    (root / "new.log").write_text("l")


def _file_becomes_folder_link(root: Path) -> None:
    (root / "README").unlink()
    os.symlink("src", root / "README")


CHANGES = [_append, _same_size_old_mtime, _delete, _rename_file, _rename_folder, _new_folders,
           _retarget_link, _exec_flip, _delete_folder, _folder_becomes_file, _ignored_only,
           _file_becomes_folder_link]


def test_every_kind_of_change_gives_gits_id_through_watchman(snapper, git):
    snapper()
    for change in CHANGES:
        change(snapper.root)
        result = snapper()
        expect_watchman(result, change.__name__)
        assert result.id == git.write_tree(snapper.root), change.__name__
        assert result.files == _indexed(git, snapper.root), change.__name__
    assert snapper.warnings == []


def test_a_change_in_an_ignored_folder_reads_no_file(snapper):
    snapper()
    (snapper.root / "build" / "gen").mkdir()
    for i in range(500):   # many reported paths, all below an ignored folder
        (snapper.root / "build" / "gen" / f"x{i}.o").write_text("x")
    result = snapper()
    expect_watchman(result)
    assert result.hashed == 0


def test_random_edit_loop_matches_git_at_every_step(snapper, git):
    rng = random.Random(1234)
    root = snapper.root
    snapper()
    folders = ["", "src", "docs", "src/deep", "new", "new/sub"]
    for step in range(40):
        folder = root / rng.choice(folders)
        folder.mkdir(parents=True, exist_ok=True)
        existing = sorted(p for p in folder.iterdir()
                          if p.is_file() and not p.is_symlink() and p.name != ".gitignore")
        action = rng.choice(["write", "write", "append", "delete", "chmod", "mkdir", "rmdir"])
        if action == "write" or not existing:
            (folder / f"f{rng.randrange(20)}.txt").write_text(f"{step} {rng.random()}\n")
        elif action == "append":
            with open(rng.choice(existing), "a") as f:
                f.write(f"{step}\n")
        elif action == "delete":
            rng.choice(existing).unlink()
        elif action == "chmod":
            target = rng.choice(existing)
            target.chmod(target.stat().st_mode ^ 0o100)
        elif action == "mkdir":
            make_tree(folder / f"d{step}", {"inner.txt": f"{step}"})
        elif action == "rmdir":
            subs = [p for p in folder.iterdir() if p.is_dir() and not p.is_symlink()]
            if subs:
                shutil.rmtree(rng.choice(subs))
        result = snapper()
        expect_watchman(result, (step, action))
        assert result.id == git.write_tree(root), (step, action)
        assert result.files == _indexed(git, root), (step, action)


def test_a_gitignore_edited_between_snapshots_forces_a_full_walk(snapper, git):
    snapper()
    (snapper.root / "src" / ".gitignore").write_text("*.txt\n")
    result = snapper()
    assert result.walk == "full"
    assert result.walk_reason == "src/.gitignore changed: what is kept may change anywhere below"
    assert result.id == git.write_tree(snapper.root)
    (snapper.root / ".gitignore").write_text("*.log\n")  # build/ is kept again
    result = snapper()
    assert result.walk == "full" and result.id == git.write_tree(snapper.root)
    expect_watchman(snapper())


def test_a_gitignore_in_a_new_folder_needs_no_full_walk(snapper, git):
    snapper()
    make_tree(snapper.root / "fresh", {".gitignore": "skip.me\n", "skip.me": "s", "keep": "k"})
    result = snapper()
    expect_watchman(result)
    assert result.id == git.write_tree(snapper.root)


def test_info_exclude_and_global_excludes_changes_force_a_full_walk(snapper, tmp_path):
    (snapper.root / ".git" / "info").mkdir(parents=True)
    snapper()
    (snapper.root / ".git" / "info" / "exclude").write_text("*.py\n")
    result = snapper()
    assert result.walk == "full" and result.id == _full_id(snapper.root, tmp_path)
    assert "ignore source outside" in result.walk_reason
    expect_watchman(snapper())
    excludes = Path(os.environ["XDG_CONFIG_HOME"]) / "git" / "ignore"
    excludes.parent.mkdir(parents=True, exist_ok=True)
    excludes.write_text("*.md\n")
    result = snapper()
    assert result.walk == "full" and result.id == _full_id(snapper.root, tmp_path)
    (Path(os.environ["HOME"]) / ".gitconfig").write_text("[core]\n\texcludesFile = ~/other\n")
    result = snapper()
    assert result.walk == "full" and result.id == _full_id(snapper.root, tmp_path)


def test_a_daemon_killed_between_snapshots_means_one_warning_and_a_full_walk(snapper, git,
                                                                            watchman_env):
    snapper()
    watchman_env.kill()
    _append(snapper.root)
    result = snapper()
    assert result.walk == "full" and result.id == git.write_tree(snapper.root)
    assert len(snapper.warnings) == 1 and "watchman" in snapper.warnings[0][1]
    watchman_env.start()  # a new instance: its clocks say nothing of the old one's
    _delete(snapper.root)
    result = snapper()
    assert result.walk == "full" and result.id == git.write_tree(snapper.root)
    assert result.walk_reason == "watchman restarted or lost the clock"
    expect_watchman(snapper())


def test_auto_with_the_daemon_gone_walks_silently(snapper, git, watchman_env, monkeypatch):
    monkeypatch.setenv("UNDOSTORE_FSMONITOR", "auto")
    assert snapper().walk == "full"
    expect_watchman(snapper())
    watchman_env.kill()
    _exec_flip(snapper.root)
    result = snapper()
    assert result.walk == "full" and result.id == git.write_tree(snapper.root)
    assert snapper.warnings == []


def test_a_daemon_killed_during_a_snapshot_leaves_a_correct_id(snapper, git, watchman_env):
    snapper()
    for i in range(1500):
        (snapper.root / "src" / f"gen{i}.txt").write_text(str(i))
    result = snapper(on_progress=lambda progress: watchman_env.kill())
    assert result.id == git.write_tree(snapper.root)
    _append(snapper.root)
    result = snapper()
    assert result.walk == "full" and result.id == git.write_tree(snapper.root)
    assert len(snapper.warnings) == 1


def test_a_stopped_daemon_times_out_into_a_full_walk(snapper, git, watchman_env):
    snapper.limits = snapper.limits._replace(watchman_timeout_s=0.5)
    snapper()
    watchman_env.process.send_signal(signal.SIGSTOP)
    try:
        _append(snapper.root)
        result = snapper()
    finally:
        watchman_env.process.send_signal(signal.SIGCONT)
    assert result.walk == "full" and result.id == git.write_tree(snapper.root)
    assert result.walk_reason == "no watchman daemon answered"
    assert len(snapper.warnings) == 1


def test_a_clock_from_another_watch_root_is_not_trusted(tmp_path, git, watchman_env, limits):
    # The root is watched on its own; then a .watchmanconfig above makes watchman watch the
    # project instead: the saved clock is the old watch's and says nothing of the new one.
    import pywatchman

    project = make_tree(tmp_path / "proj", {"sub": {"same": "1", "d": {"x": "x"}}})
    root = project / "sub"
    snap = Snapper(root, tmp_path / "store", limits=limits)
    snap()
    (project / ".watchmanconfig").write_text("{}")
    client = pywatchman.client(sockpath=watchman_env.sock, timeout=10)
    try:
        client.query("watch-del", str(root))
    finally:
        client.close()
    (root / "d" / "x").write_text("y")
    result = snap()
    assert result.walk == "full" and result.id == git.write_tree(root)
    assert result.walk_reason == "clock from another watch root"
    again = snap()
    expect_watchman(again)
    assert again.id == result.id


def test_the_store_inside_the_root_is_never_reported(tmp_path, git, watchman_env, limits):
    root = make_tree(tmp_path / "root", {"f": "1", "d": {"g": "2"}})
    snap = Snapper(root, root / ".undo-store", limits=limits)
    first = snap()
    (root / "d" / "g").write_text("3")
    second = snap()
    third = snap()   # the store's own writes since the last query are not changes
    assert used_watchman(second) and used_watchman(third), (second.walk_reason,
                                                              third.walk_reason)
    assert third.hashed == 0 and third.id == second.id
    git_dir = git.private_dir(root)
    (git_dir / "info").mkdir(exist_ok=True)
    (git_dir / "info" / "exclude").write_text("/.undo-store/\n")
    assert second.id == git.write_tree(root) != first.id


def test_a_restore_then_a_snapshot_is_right(snapper, git, limits):
    first = snapper()
    _new_folders(snapper.root)
    _delete(snapper.root)
    snapper()
    with Workspace(snapper.root, store=snapper.store, limits=limits) as ws:
        ws.restore(first.id)
    result = snapper()
    assert result.id == first.id == git.write_tree(snapper.root)
    _append(snapper.root)
    result = snapper()
    expect_watchman(result)
    assert result.id == git.write_tree(snapper.root)


def test_cli_reports_the_walk(snapper, cli):
    import json

    def run() -> dict:
        out = cli.run("--store", str(snapper.store), "snapshot", "--json", root=snapper.root)
        assert out.returncode == 0, out.stderr
        return json.loads(out.stdout)

    first, again = run(), run()
    assert first["walk"] == "full"
    assert first["walk_reason"] == "no watchman clock saved with the stat cache"
    if expect_watchman(again)["walk"] == "watchman":
        assert again["walk_reason"] == ""


def test_a_root_inside_a_watched_project_uses_a_relative_root(tmp_path, git, watchman_env, limits):
    # A .watchmanconfig above makes watchman watch the project; the root is a folder inside it.
    project = make_tree(tmp_path / "proj", {".watchmanconfig": "{}", "other": {"x": "x"},
                                            "sub": {"a.txt": "a", "d": {"b.txt": "b"}}})
    root = project / "sub"
    snap = Snapper(root, tmp_path / "store", limits=limits)
    time.sleep(0.2)   # out of the racy window: the first snapshot's entries are all kept
    snap()
    (project / "other" / "y").write_text("outside the root")
    (root / "d" / "c.txt").write_text("c")
    result = snap()
    expect_watchman(result)
    assert result.id == git.write_tree(root)
    assert result.hashed == 1


def test_a_voided_cache_means_a_full_walk(snapper, git):
    snapper()
    expect_watchman(snapper())
    # The store loses the packs the cache vouches for (deleted by hand, an old backup).
    pack_dir = snapper.store / "objects" / "pack"
    for pack in pack_dir.iterdir():
        pack.unlink()
    _append(snapper.root)
    result = snapper()
    assert result.walk == "full" and result.id == git.write_tree(snapper.root)
    assert result.hashed == result.files
    assert any("stat cache" in m for _, m in snapper.warnings)


def test_changes_in_a_big_folder_read_only_the_reported_files(tmp_path, git, watchman_env, limits):
    root = make_tree(tmp_path / "root", {"big": {f"f{i:04}.txt": f"{i}\n" for i in range(2000)},
                                         "other": {"x": "x"}})
    snap = Snapper(root, tmp_path / "store", limits=limits)
    time.sleep(0.2)   # out of the racy window: every entry of the first snapshot is kept
    snap()
    big = root / "big"
    with open(big / "f0007.txt", "a") as f:
        f.write("more\n")
    (big / "f0100.txt").unlink()
    (big / "new.txt").write_text("new\n")
    (big / "f0200.txt").chmod(0o755)
    os.utime(big / "f0300.txt")          # a touch: stat changes, content does not
    time.sleep(0.2)
    result = snap()
    assert result.id == git.write_tree(root)
    assert used_watchman(result), (result.walk_reason, snap.warnings)
    if result.walk == "watchman":
        assert result.hashed == 4
    assert result.files == _indexed(git, root)
    # A reported name that became a folder: the folder is read whole, still git's id.
    (big / "f0400.txt").unlink()
    make_tree(big / "f0400.txt", {"inside": "i"})
    result = snap()
    assert used_watchman(result), (result.walk_reason, snap.warnings)
    assert result.id == git.write_tree(root)
    assert snap().hashed == 0


@pytest.mark.parametrize("inserts", [16, 0])   # 0: a new name makes the splice give up
def test_a_big_folder_is_spliced_from_its_old_tree_to_gits_id(tmp_path, git, watchman_env,
                                                              inserts, limits):
    names = {f"f{i:04}.txt": f"{i}\n" for i in range(1500)}
    root = make_tree(tmp_path / "root", {"big": {
        **names, "m.txt": "m", "m-1": "m", "m0": "m", "n-": "n",
        "m": {"inner.txt": "i"}, "n": {"x": "x"}, "o": {}, "link": Link("m.txt")}})
    snap = Snapper(root, tmp_path / "store", limits=limits._replace(splice_max_inserts=inserts))
    time.sleep(0.2)   # out of the racy window: the big folder's record is complete
    snap()
    big = root / "big"
    with open(big / "f0007.txt", "a") as f:
        f.write("more\n")
    (big / "f0100.txt").unlink()
    (big / "m.txt").unlink()
    (big / "m-0").write_text("new, sorts before m-1")
    (big / "a-first").write_text("new, sorts first")
    (big / "zz-last").write_text("new, sorts last")
    (big / "f0200.txt").chmod(0o755)
    (big / "m" / "inner.txt").write_text("changed below")   # a sub-tree's id changes
    (big / "n" / "x").unlink()                               # a sub-tree empties
    (big / "o" / "y").write_text("y")                        # an empty folder fills
    (big / "link").unlink()
    os.symlink("m0", big / "link")
    time.sleep(0.2)
    result = snap()
    expect_watchman(result)
    assert result.id == git.write_tree(root)
    assert result.files == _indexed(git, root)
    assert snap().hashed == 0
    (big / "o" / "y").unlink()                               # and empties again
    (big / "n-").unlink()
    result = snap()
    expect_watchman(result)
    assert result.id == git.write_tree(root)
    assert result.files == _indexed(git, root)


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0
                    or shutil.which("setpriv") is None,
                    reason="root, dropping its right to read every file (setpriv)")
def test_a_file_it_cannot_read_is_left_out_through_watchman_too(snapper, cli):
    """A file watchman reports that this user cannot read is left out with a warning (the
    snapshot as root without the right to read every file, as any user is): the id is the
    tree's without it, on the watchman path as on a walk."""
    import json
    import subprocess

    def run() -> subprocess.CompletedProcess[str]:
        argv = cli.argv("--store", str(snapper.store), "snapshot", "--json", root=snapper.root)
        return subprocess.run(["setpriv", "--bounding-set", "-dac_override,-dac_read_search",
                               "--", *argv], capture_output=True, text=True, timeout=120)

    assert run().returncode == 0
    assert expect_watchman(json.loads(run().stdout))["walk"] == "watchman"
    secret = snapper.root / "src" / "deep" / "c.py"
    secret.write_text("c, changed and unreadable\n")
    secret.chmod(0)
    try:
        result = run()
        assert result.returncode == 0, result.stderr
        assert "src/deep/c.py: skipped: cannot read this file (Permission denied)" in result.stderr
        saved = secret.read_bytes()
        secret.unlink()
        expected = snapper().id
        secret.write_bytes(saved)
        assert json.loads(result.stdout)["id"] == expected
    finally:
        if secret.exists():
            secret.chmod(0o644)


def test_a_watch_that_lost_its_cookie_folder_is_watched_again_once(tmp_path, watchman_env,
                                                                   limits):
    """watchman puts its sync cookies in the VCS folder it found when the watch began (`.svn`
    here); once that folder is removed every sync fails. The snapshot that meets it watches the
    root again (one warning saying so) and walks; the next ones use watchman again."""
    root = make_tree(tmp_path / "root", {".svn": {"wc.db": "x"}, "a.txt": "a\n"})
    snap = Snapper(root, tmp_path / "store", limits)
    snap()
    expect_watchman(snap())
    shutil.rmtree(root / ".svn")
    (root / "a.txt").write_text("b\n")
    snap.warnings.clear()
    healed = snap()
    assert healed.id == _full_id(root, tmp_path)
    [(_, message)] = snap.warnings
    assert "cookie folder" in message and "watched again" in message, message
    snap.warnings.clear()
    for text in ("c\n", "d\n"):
        (root / "a.txt").write_text(text)
        again = expect_watchman(snap(), snap.warnings)
        assert again.id == _full_id(root, tmp_path) and snap.warnings == []


def test_a_file_moved_out_of_an_unreported_folder_during_the_snapshot_is_taken_once(
        snapper, git, monkeypatch):
    """watchman is asked what changed, then the folders it named are read. A file moved, right
    after the answer, out of a folder it did not name (taken from the cache) into one it named
    (read whole: a folder appeared in it) would be in the tree twice; one more query after the
    walk sees the move and the snapshot is taken again: the id is the files' one real state."""
    from undostore.snapshot import watchman

    snapper()
    (snapper.root / "src" / "new").mkdir()            # src is read whole next time
    (snapper.root / "src" / "new" / "e.py").write_text("e\n")
    real_since = watchman.Monitor.since
    moves = []

    def since_then_move(self, token):
        changes = real_since(self, token)
        if not moves:   # once: right after the first answer, before src is read
            moves.append(True)
            os.rename(snapper.root / "docs" / "guide.md", snapper.root / "src" / "guide.md")
        return changes

    monkeypatch.setattr(watchman.Monitor, "since", since_then_move)
    result = snapper()
    expect_watchman(result)
    assert moves
    assert result.id == git.write_tree(snapper.root)   # guide.md in src only


@pytest.mark.parametrize("mode, files, watched", [("auto", 30, True), ("auto", 10, False),
                                                  ("off", 30, False)])
def test_init_starts_watching_a_large_tree_unless_the_setting_says_otherwise(
        tmp_path, watchman_env, monkeypatch, mode, files, watched):
    """`init` on a tree of WATCH_FROM_FILES files or more (20 here), with watchman installed and
    UNDOSTORE_FSMONITOR `auto`, takes one more snapshot with watchman (starting the daemon and
    the watch where they are not running, saving the clock), so later prompts ask watchman; a
    smaller tree, or `off`, is left alone."""
    import json
    import subprocess

    root = make_tree(tmp_path / "tree", {f"f{i}.txt": f"{i}\n" for i in range(files)})
    monkeypatch.setenv("UNDOSTORE_FSMONITOR", mode)
    program = ("import sys\nimport undostore.snapshot.watchman as watchman\n"
               "watchman.WATCH_FROM_FILES = 20\n"
               "from undostore_cli.entry import main\nmain(sys.argv[1:])")
    done = subprocess.run([sys.executable, "-c", program, "init", "cursor", "--json"], cwd=root,
                          capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stderr
    first = json.loads(done.stdout)["first_snapshot"]
    assert first["files"] == files + 1   # and .cursor/hooks.json
    assert first["watchman"] is watched
    if mode == "off":
        import pywatchman

        client = pywatchman.client(sockpath=watchman_env.sock, timeout=10)
        try:
            roots = client.query("watch-list")["roots"]
        finally:
            client.close()
        assert os.path.realpath(root) not in roots
    if watched:
        with Workspace(root) as ws:   # `auto`: the daemon answers, the clock is saved
            expect_watchman(ws.snapshot(), "after init")


def test_the_file_limit_holds_when_watchman_answers(snapper):
    """Issue 55, item 7: the limit was counted by the walk only, so a tree that grew past it
    between two snapshots was captured when watchman answered."""
    from undostore.errors import TooManyFilesError

    first = snapper()
    limit = first.files + 2
    for n in range(3):
        (snapper.root / "src" / f"new{n}.py").write_text(f"{n}\n")
    with pytest.raises(TooManyFilesError) as refused:
        expect_watchman(snapper(max_files=limit))
    assert refused.value.limit == limit
    (snapper.root / "src" / "new2.py").unlink()
    again = expect_watchman(snapper(max_files=limit))
    assert again.files == limit
