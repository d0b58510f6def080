"""Folders that did not change are not read again (walk.py, git's untracked cache), and what a
snapshot keeps stays exactly git's: changes that leave a folder's stat alone (a `.gitignore`
edited in place, `info/exclude`), changes made right after a snapshot (racy stamps), and a
random run of changes each checked against `git add -A && git write-tree`.
"""

from __future__ import annotations

import os
import random
import shutil
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from undostore import Workspace
from undostore.git.reader import ObjectReader
from undostore.limits import Limits
from undostore.restore.plan import flatten
from undostore.snapshot.capture import known_for
from undostore.snapshot.ignore import IgnoreRules
from undostore.snapshot.snapshot import SnapshotResult
from undostore.snapshot.walk import UNTRUSTED, WalkOptions, iter_walk, trusted_stamp
from undostore.store.statcache import StatCache, entries_follow_names

from .conftest import IS_WINDOWS, Git, make_tree
from .process_support import until_exited

# Older than the racy window (statcache: 50 ms), so a snapshot may save the folders' stamps.
SETTLE = 0.08


def _snapshot(root: Path, store: Path) -> str:
    with Workspace(root, store=store) as ws:
        return ws.snapshot().id


def _cache(root: Path, store: Path) -> StatCache:
    with Workspace(root, store=store) as ws:
        return StatCache.load(ws.store.stat_cache_path, ws.store.identity)


def _reused(root: Path, store: Path) -> tuple[int, int]:
    """(folders whose listing a walk now reuses, folders walked)."""
    cache = _cache(root, store)
    folders = list(iter_walk(str(root), WalkOptions(known=known_for(cache))))
    return sum(f.joined is not None for f in folders), len(folders)


@pytest.fixture(autouse=True)
def _no_watchman(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("UNDOSTORE_FSMONITOR", "off")


def _spec() -> dict:
    return {".gitignore": "*.log\n!keep.log\nbuild/\n", "a.txt": "a", "a.log": "x",
            "keep.log": "k", "build": {"out.o": "o"},
            "src": {"m.c": "c", "n.log": "l", ".gitignore": "/gen\n", "gen": "g",
                    "deep": {"x.c": "x", "gen": "kept: anchored above"}}}


def test_unchanged_folders_are_reused_and_ids_stay_gits(tmp_path: Path, git):  # noqa: ANN001
    root = make_tree(tmp_path / "t", _spec())
    store = tmp_path / "store"
    time.sleep(SETTLE)
    first = _snapshot(root, store)
    assert first == git.write_tree(root)
    assert _reused(root, store) == (3, 3)     # root, src, src/deep: build/ is ignored
    assert _snapshot(root, store) == first
    (root / "src" / "new.c").write_text("new")   # a name the listing lacks: read again
    reused, walked = _reused(root, store)
    assert walked == 3 and reused < 3
    assert _snapshot(root, store) == git.write_tree(root)


def test_gitignore_edited_in_place_is_seen_below(tmp_path: Path, git):  # noqa: ANN001
    root = make_tree(tmp_path / "t", _spec())
    store = tmp_path / "store"
    time.sleep(SETTLE)
    _snapshot(root, store)
    for ignore_file, text in ((root / ".gitignore", b"build/\n"),
                              (root / "src" / ".gitignore", b"# nothing\n"),
                              (root / ".gitignore", b"*.log\n*.c\n")):
        folder = os.stat(ignore_file.parent).st_mtime_ns
        time.sleep(SETTLE)
        with open(ignore_file, "r+b") as f:   # same inode, same folder: only its own stat moves
            f.truncate(0)
            f.write(text)
        assert os.stat(ignore_file.parent).st_mtime_ns == folder
        assert _snapshot(root, store) == git.write_tree(root)


def test_info_exclude_and_undostoreignore_changes_reach_every_folder(tmp_path: Path):
    root = make_tree(tmp_path / "t", {"a.txt": "a", "sub": {"b.txt": "b", "c.tmp": "c"}})
    (root / ".git" / "info").mkdir(parents=True)
    exclude = root / ".git" / "info" / "exclude"
    exclude.write_text("")
    store = tmp_path / "store"
    time.sleep(SETTLE)
    with Workspace(root, store=store) as ws:
        assert ws.snapshot().files == 3
        with open(exclude, "r+b") as f:
            f.write(b"*.tmp\n")
        assert ws.snapshot().files == 2
        with open(root / ".undostoreignore", "wb") as f:
            f.write(b"*.txt\n")   # leaves only .undostoreignore itself
        assert ws.snapshot().files == 1


def test_stamps_taken_too_close_to_the_save_are_not_trusted(tmp_path: Path):
    root = make_tree(tmp_path / "t", {"a.txt": "a", "sub": {"b.txt": "b"}})
    store = tmp_path / "store"
    # Folder times within the racy margin of the save prove nothing. "Made moments ago" was
    # not enough: a loaded Wine run took longer than the 50 ms margin to reach the save. A
    # time ahead of it (not a whole second, which reads as a coarse file system) always is.
    ahead = time.time_ns() + 10_000_000_123
    for folder in (root, root / "sub"):
        os.utime(folder, ns=(ahead, ahead))
    _snapshot(root, store)
    records = _cache(root, store).records
    assert all(r.stamp[:len(UNTRUSTED)] == UNTRUSTED for r in records.values())
    # So each folder is listed again; its names being those it kept, its listing serves
    # (not on Windows, where a bare listing cannot tell a junction: the folder is read).
    assert _reused(root, store) == (0 if IS_WINDOWS else 2, 2)
    stamp = records["sub"].stamp
    assert trusted_stamp(stamp, lambda mtime, ctime: False) == stamp or (
        os.stat(root / "sub").st_mtime_ns % 1_000_000_000 == 0)


@pytest.mark.skipif(IS_WINDOWS, reason="there the change time is the creation time")
def test_a_tarball_made_tree_keeps_its_listings(tmp_path: Path, git):  # noqa: ANN001
    """`tar` sets every folder's mtime to a whole second; their change times stay fine-grained
    (the file system moves them on every add, remove and rename): the listings are reused, and
    an entry added later is still seen (issue 47: 4,969 of 5,095 folders were read again)."""
    root = make_tree(tmp_path / "t", {"a.txt": "a", "src": {"m.c": "c", "deep": {"x.c": "x"}},
                                      "docs": {"d.md": "d"}})
    for folder in (root, root / "src", root / "src" / "deep", root / "docs"):
        os.utime(folder, ns=(1_600_000_000_000_000_000, 1_600_000_000_000_000_000))
    time.sleep(SETTLE)
    store = tmp_path / "store"
    _snapshot(root, store)
    folders = list(iter_walk(str(root), WalkOptions(known=known_for(_cache(root, store)))))
    assert [(f.joined is not None, f.relisted) for f in folders] == [(True, False)] * 4
    (root / "src" / "deep" / "y.c").write_text("y")
    os.utime(root / "src" / "deep", ns=(1_600_000_000_000_000_000, 1_600_000_000_000_000_000))
    assert _snapshot(root, store) == git.write_tree(root)   # its ctime moved: read again


def test_a_folder_replaced_by_a_file_and_back(tmp_path: Path, git):  # noqa: ANN001
    root = make_tree(tmp_path / "t", {"a": {"x.txt": "x"}, "b.txt": "b"})
    store = tmp_path / "store"
    time.sleep(SETTLE)
    _snapshot(root, store)
    shutil.rmtree(root / "a")
    (root / "a").write_text("now a file")
    assert _snapshot(root, store) == git.write_tree(root)
    time.sleep(SETTLE)
    _snapshot(root, store)
    (root / "a").unlink()
    make_tree(root / "a", {"y.txt": "y"})
    assert _snapshot(root, store) == git.write_tree(root)



def _rename_over(path: Path, text: str) -> None:
    temp = path.with_name(".tmp-write")
    temp.write_text(text)
    os.replace(temp, path)


@pytest.mark.parametrize(("change", "still_reused"), [
    (lambda src: (src / "trace.log").write_text("ignored"), True),
    (lambda src: _rename_over(src / "m.c", "rewritten"), True),   # as a restore writes
    (lambda src: (src / "new.c").write_text("kept"), False),
    (lambda src: (src / "n.log").unlink(), True),                 # an ignored one gone
    (lambda src: (src / "m.c").unlink(), False),
    (lambda src: ((src / "m.c").unlink(), (src / "m.c").mkdir(),
                  (src / "m.c" / "f").write_text("f")), False),
    (lambda src: shutil.rmtree(src / "deep"), False),
], ids=["ignored-added", "renamed-over", "kept-added", "ignored-removed", "kept-removed",
        "file-to-folder", "folder-removed"])
def test_a_folder_whose_stat_moved_keeps_its_listing_while_its_names_do(
        tmp_path: Path, git, change, still_reused) -> None:  # noqa: ANN001
    """A folder whose own stat moved but whose names are what its listing kept (plus ignored
    ones) is listed by name only and its listing kept; any other change reads it again."""
    root = make_tree(tmp_path / "t", _spec())
    store = tmp_path / "store"
    time.sleep(SETTLE)
    _snapshot(root, store)
    assert _reused(root, store) == (3, 3)
    before = os.stat(root / "src").st_mtime_ns
    time.sleep(SETTLE)
    change(root / "src")
    assert os.stat(root / "src").st_mtime_ns != before
    reused, walked = _reused(root, store)
    assert reused == walked if still_reused else reused < walked
    assert _snapshot(root, store) == git.write_tree(root)


def _matched(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The paths `IgnoreRules.is_ignored` is asked about from now on."""
    asked: list[str] = []
    original = IgnoreRules.is_ignored

    def counted(self: IgnoreRules, path: str, is_dir: bool) -> bool:
        asked.append(path)
        return original(self, path, is_dir)

    monkeypatch.setattr(IgnoreRules, "is_ignored", counted)
    return asked


def test_a_rebuild_of_ignored_outputs_matches_no_name_seen_ignored_before(
        tmp_path: Path, git, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: ANN001
    """A build that writes its ignored outputs again moves every folder's stat: each is listed
    again by name, and the names its last listing found ignored are taken as ignored without
    matching (git's untracked cache); a name not seen before is matched."""
    spec = {".gitignore": "*.o\nout/\n"}
    spec.update({f"d{i}": {"m.c": f"{i}", "m.o": "o", "out": {"x": "x"}} for i in range(12)})
    root = make_tree(tmp_path / "t", spec)
    store = tmp_path / "store"
    time.sleep(SETTLE)
    _snapshot(root, store)
    time.sleep(SETTLE)
    for i in range(12):   # as `make` does: the old output removed, a new one written
        (root / f"d{i}" / "m.o").unlink()
        (root / f"d{i}" / "m.o").write_text("rebuilt")
        shutil.rmtree(root / f"d{i}" / "out")
        (root / f"d{i}" / "out").mkdir()
    (root / "d3" / "n.o").write_text("a new output")
    time.sleep(SETTLE)
    asked = _matched(monkeypatch)
    reused, walked = _reused(root, store)
    if not IS_WINDOWS:   # there a folder whose stat moved is read again (walk._RELIST)
        assert (reused, walked, asked) == (13, 13, ["d3/n.o"])
    assert _snapshot(root, store) == git.write_tree(root)
    asked.clear()
    _reused(root, store)
    assert asked == []


def test_a_name_found_ignored_as_a_folder_is_matched_again_as_a_file(tmp_path: Path, git):  # noqa: ANN001
    """What a listing found ignored is remembered with its type: `logs/` ignores the folder
    `logs`, and a file `logs` that replaces it is matched (and kept)."""
    root = make_tree(tmp_path / "t", {".gitignore": "logs/\n", "m.c": "c",
                                      "logs": {"a.txt": "a"}})
    store = tmp_path / "store"
    time.sleep(SETTLE)
    first = _snapshot(root, store)
    time.sleep(SETTLE)
    shutil.rmtree(root / "logs")
    (root / "logs").write_text("a file now")
    time.sleep(SETTLE)
    got = _snapshot(root, store)
    assert got == git.write_tree(root) != first
    assert "logs" in _cache(root, store).records[""].names.split("\0")


# --- a random run of changes, each snapshot checked against git -------------------------------

NAMES = ("a.c", "b.log", "keep.log", "c.o", "gen", "d.txt")
FOLDERS = ("", "src", "src/deep", "lib", "build", "lib/x")
PATTERNS = ("*.log", "!keep.log", "*.o", "build/", "/gen", "gen", "deep/", "!*.c", "*.[ot]",
            "x*")


def _swap_type(path: Path) -> None:
    """A file becomes a folder of that name, or a folder a file (a name keeps no type)."""
    if path.is_dir():
        shutil.rmtree(path)
        path.write_bytes(os.urandom(4))
    else:
        path.unlink(missing_ok=True)
        path.mkdir()
        (path / "inner.c").write_bytes(b"inside")


def _mutate(root: Path, rng: random.Random) -> None:
    folder = root / rng.choice(FOLDERS)
    if any(p.is_file() for p in (folder, *folder.parents)):
        return   # a file stands where the folder or one above it was (a swap made it)
    op = rng.randrange(11)
    if op >= 8 and folder.is_dir():
        if op <= 9:   # most often a name that `deep/` (a folder-only pattern) ignores
            _swap_type(folder / rng.choice(("deep", "deep", "gen", "c.o")))
        else:   # a build's outputs written again: the folder's stat moves, its names stay
            for path in [p for p in folder.iterdir() if p.is_file() and rng.random() < 0.5]:
                path.unlink()
                path.write_bytes(os.urandom(4))
        return
    if op <= 1:
        folder.mkdir(parents=True, exist_ok=True)
        target = folder / rng.choice(NAMES)
        if not target.is_dir():
            target.write_bytes(os.urandom(4))
    elif op == 2:
        files = [p for p in folder.glob("*") if p.is_file() and p.name != ".gitignore"]
        if files:
            rng.choice(files).unlink()
    elif op == 3:   # a .gitignore written in place: the folder's own stat does not move
        folder.mkdir(parents=True, exist_ok=True)
        text = "\n".join(rng.sample(PATTERNS, rng.randint(0, 3))) + "\n"
        mode = "r+" if (folder / ".gitignore").exists() else "w"
        with open(folder / ".gitignore", mode) as f:
            f.truncate(0)
            f.write(text)
    elif op == 4 and folder != root and folder.is_dir():
        shutil.rmtree(folder)
    elif op == 5:
        files = [p for p in folder.glob("*") if p.is_file()]
        other = root / rng.choice(FOLDERS)
        if files and other.is_dir():
            source = rng.choice(files)
            if not (other / source.name).is_dir():
                os.replace(source, other / source.name)
    elif op == 6 and not IS_WINDOWS:
        files = [p for p in folder.glob("*") if p.is_file()]
        if files:
            path = rng.choice(files)
            path.chmod(path.stat().st_mode ^ 0o100)
    else:
        files = [p for p in folder.glob("*") if p.is_file() and p.name != ".gitignore"]
        if files:
            with open(rng.choice(files), "r+b") as f:
                f.write(os.urandom(3))


def test_random_changes_keep_the_snapshot_equal_to_a_fresh_one(tmp_path: Path,
                                                               limits: Limits) -> None:
    """Each snapshot through the cache equals one taken with a new store (which reads every
    folder) and, where git is installed, git's tree (the Windows lane has no git); with every
    reused folder that changed spliced from its old tree too."""
    _random_changes(tmp_path, limits, rounds=60)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="the lstats split needs fork")
def test_random_changes_with_the_lstats_in_two_processes_keep_the_snapshot_equal(
        tmp_path: Path) -> None:
    """The same, each walk's lstats split with a second process (snapshot/lstatsplit.py) in
    chunks of two files; in some rounds the child answers everything before the walk starts
    (its answers then serve every folder whose stamp held), in others the two race."""
    rng = random.Random(5)
    vouched = 0

    def fork() -> int:
        pid = os.fork()
        if pid and rng.random() < 0.5:
            until_exited(pid)
        return pid

    def counted(result: SnapshotResult) -> None:
        nonlocal vouched
        vouched += result.vouched

    def in_place(root: Path, rng: random.Random) -> None:
        """A file rewritten in place (its folder's stamp does not move: only its own lstat
        shows it), in half the rounds."""
        files = [p for p in root.rglob("*") if p.is_file() and p.name != ".gitignore"]
        if files and rng.random() < 0.5:
            with open(rng.choice(files), "r+b") as f:
                f.write(os.urandom(1))

    _random_changes(tmp_path, Limits(split_lstat_min_files=0, split_chunk_files=2), rounds=30,
                    fork=fork, seen=counted, also=in_place)
    assert vouched > 0


def _random_changes(tmp_path: Path, limits: Limits, rounds: int,
                    fork: Callable[[], int] | None = None,
                    seen: Callable[[SnapshotResult], None] = lambda result: None,
                    also: Callable[[Path, random.Random], None] | None = None) -> None:
    oracle = shutil.which("git")
    git = Git(oracle) if oracle else None
    rng = random.Random(23)
    root = make_tree(tmp_path / "t", {".gitignore": "*.log\ndeep/\n", "src": {"a.c": "a"}})
    store = tmp_path / "store"
    reused = relisted = 0
    with Workspace(root, store=store, limits=limits) as ws:
        ws.fork = fork
        for round_no in range(rounds):
            for _ in range(rng.randint(1, 3)):
                _mutate(root, rng)
            if also is not None:
                also(root, rng)
            if rng.random() < 0.5:
                time.sleep(SETTLE)    # old enough: the next snapshot saves trusted stamps
            cache = StatCache.load(ws.store.stat_cache_path, ws.store.identity)
            folders = list(iter_walk(str(root), WalkOptions(known=known_for(cache))))
            reused += sum(f.joined is not None for f in folders)
            relisted += sum(f.relisted for f in folders)
            result = ws.snapshot()
            seen(result)
            assert result.id == _snapshot(root, tmp_path / f"fresh{round_no}")
            if git is not None:
                assert result.id == git.write_tree(root)
    assert reused > 0
    assert IS_WINDOWS or relisted > 0


def test_a_racy_file_leaves_a_big_folder_compared_in_order_and_spliced(tmp_path: Path) -> None:
    """A file changed right before a snapshot keeps only its mode in the cache; its folder's
    entries stay in the order of its names, so the next walk still compares them in place
    (not name by name), and once the file is hashed again and settled the names are no longer
    listed apart. Every id equals a fresh store's."""
    root = make_tree(tmp_path / "t", {"big": {f"f{i:03}.txt": f"{i}" for i in range(60)}})
    store = tmp_path / "store"
    spliced = Limits(splice_min_files=0)
    time.sleep(SETTLE)
    with Workspace(root, store=store, limits=spliced) as ws:
        ws.snapshot()
        for round_no, name in enumerate(("f007.txt", "f031.txt", "f007.txt", "f059.txt")):
            (root / "big" / name).write_text(f"changed {round_no}")
            got = ws.snapshot().id   # at once: the changed file is racy
            assert got == _snapshot(root, tmp_path / f"fresh{round_no}")
            record = _cache(root, store).records["big"]
            assert entries_follow_names(record) and record.entry_names is not None
            assert known_for(_cache(root, store))("big").entries is not None   # compared in order
        time.sleep(SETTLE)
        assert ws.snapshot().id == got
    assert _cache(root, store).records["big"].entry_names is None
    assert _reused(root, store) == (2, 2)


def test_folders_above_a_restores_changes_are_reused_by_the_next_walk(
        tmp_path: Path, git, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: ANN001
    """A restore that rewrites the 300 files of src/deep (enough to update the stat cache)
    changes only src/deep's listing: the root and src keep their stamps (src and src/deep with
    the target's tree ids, the root with none, so only its tree is encoded again), and the next
    walk lists src/deep again by name alone (its names are those it kept: the listing serves;
    the ignored ones it held are not matched again); ids stay git's."""
    spec = _spec()
    spec["src"]["deep"].update({f"f{i:03}.c": f"{i}" for i in range(300)})
    spec["src"]["deep"].update({f"trace{i}.log": "ignored" for i in range(5)})
    root = make_tree(tmp_path / "t", spec)
    store = tmp_path / "store"
    time.sleep(SETTLE)
    with Workspace(root, store=store) as ws:
        first = ws.snapshot().id
        for i in range(300):
            (root / "src" / "deep" / f"f{i:03}.c").write_text(f"changed {i}")
        time.sleep(SETTLE)
        second = ws.snapshot().id
        ws.restore(first)
    time.sleep(SETTLE)
    cache = _cache(root, store)
    with ObjectReader(ws.store) as reader:
        trees = flatten(reader.read_tree_body, bytes.fromhex(first)).trees
    assert cache.records[""].tree_id is False
    assert [cache.records[f].tree_id for f in ("src", "src/deep")] == [trees["src"],
                                                                       trees["src/deep"]]
    assert cache.records[""].stamp and cache.records["src"].stamp
    # src/deep is listed again (its listing untrusted); its `.gitignore` part still vouches
    # for the rules of the folders below it.
    assert cache.records["src/deep"].stamp[:len(UNTRUSTED)] == UNTRUSTED
    asked = _matched(monkeypatch)
    assert _reused(root, store) == (2 if IS_WINDOWS else 3, 3)
    assert IS_WINDOWS or asked == []
    assert _snapshot(root, store) == first == git.write_tree(root)
    (root / "src" / "deep" / "f007.c").write_text("changed 7")
    assert _snapshot(root, store) == git.write_tree(root) != second


def test_a_gitignore_of_bytes_that_are_not_utf8_is_read_everywhere(tmp_path: Path):
    """A build that rewrote `.gitignore` with arbitrary bytes (the random run above does): its
    patterns match as git's bytes do; on Windows, reading it raised UnicodeDecodeError."""
    root = make_tree(tmp_path / "t", {"a.c": "a", "b.log": "b"})
    (root / ".gitignore").write_bytes(b"\xc9\xcd1S\n*.log\n/\x04\x0c\x92\n")
    store = tmp_path / "store"
    got = _snapshot(root, store)
    assert got == _snapshot(root, tmp_path / "again")
    oracle = shutil.which("git")   # the Windows lane has none
    if oracle is not None:
        assert got == Git(oracle).write_tree(root)
    with Workspace(root, store=store) as ws:
        assert sorted(p for p, _m, _s in ws.store.iter_tree_files(bytes.fromhex(got))) == [
            ".gitignore", "a.c"]
