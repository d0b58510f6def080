"""Damage never spreads (issue 16): a damaged store heals or refuses, gc deletes only what it can
account for, one store protects one root, and no temp file survives. Messages are checked through
the real CLI (one line each, no Python warning format)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from undostore import Workspace
from undostore.errors import IncompleteSnapshotError
from undostore.git.objects import MODE_TREE
from undostore.git.reader import ObjectReader
from undostore.snapshot.snapshot import SnapshotOptions
from undostore.store.store import default_store_path

from .conftest import Cli, Git
from .watchman_daemon import expect_watchman


def cli(root: Path, *args: str, store: str | None = None) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    if store is not None:
        env["UNDOSTORE_STORE"] = store
    return Cli().run(*args, cwd=root, env=env)


def ok(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 0, result.stderr
    return result.stdout.strip()


@pytest.fixture
def tree_id(tmp_path):  # noqa: ANN001, ANN201
    """The tree id of a folder's files: git's where git is installed, else a snapshot into a
    fresh store of its own (the snapshot's ids are checked against git elsewhere)."""
    exe = shutil.which("git")

    def of(root: Path) -> str:
        if exe is not None:
            return Git(exe).write_tree(root)
        with Workspace(root, tmp_path / f"fresh-{os.urandom(4).hex()}") as fresh:
            return fresh.snapshot().id

    return of


def one_clear_line_each(stderr: str) -> None:
    for line in stderr.splitlines():
        assert line.startswith("undostore: "), stderr
        assert "Warning:" not in line and ".py:" not in line and "Traceback" not in line, stderr


def pack_dir(root: Path) -> Path:
    return Path(default_store_path(str(root))) / "objects" / "pack"


def newest_pack(root: Path) -> Path:
    return max(pack_dir(root).glob("pack-*.pack"), key=lambda p: p.stat().st_mtime_ns)


def flip(path: Path, at: int) -> None:
    data = bytearray(path.read_bytes())
    data[at] ^= 0x41
    path.write_bytes(bytes(data))


def files_of(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file() and ".gitdir" not in str(p)}


def record_of(root: Path, snapshot: str, path: str):  # noqa: ANN201 (pack, record)
    with Workspace(root) as ws:
        sha = next(s for p, _m, s in ws.store.iter_tree_files(bytes.fromhex(snapshot)) if p == path)
    with ObjectReader(str(pack_dir(root))) as reader:
        return reader.record_of(sha)


def every_object_checks(root: Path, snapshot: str) -> None:
    result = cli(root, "verify", snapshot)
    assert result.returncode == 0, result.stdout + result.stderr


def two_states(tree_factory) -> tuple[Path, str, str]:  # noqa: ANN001
    root = tree_factory({"a.txt": "first\n" * 50, "b.txt": "bee\n", "sub": {"c.txt": "sea\n"}})
    first = ok(cli(root, "snapshot", "--session", "S"))
    (root / "a.txt").write_text("second\n" * 50)
    (root / "d.txt").write_text("dee\n")
    (root / "noise.bin").write_bytes(os.urandom(3000))   # a pack worth cutting into
    second = ok(cli(root, "snapshot", "--session", "S"))
    return root, first, second


# --- 1. a damaged pack never leads to a damaged id --------------------------------------------


@pytest.mark.parametrize("cut", [5, 20, 40, 1000, "half"])
def test_a_truncated_pack_never_hands_out_a_damaged_id(tree_factory, tree_id, cut):
    root, first, second = two_states(tree_factory)
    pack = newest_pack(root)
    size = pack.stat().st_size
    os.truncate(pack, size // 2 if cut == "half" else size - cut)
    (root / "e.txt").write_text("eee\n")

    third = ok(cli(root, "snapshot", "--session", "S"))

    assert third == tree_id(root)
    every_object_checks(root, third)
    assert os.listdir(pack_dir(root) / "damaged")   # moved aside, never deleted
    # Restoring the intact first state works whatever happened to the second's pack.
    restored = cli(root, "restore", first, "--yes")
    assert restored.returncode == 0, restored.stderr
    assert (root / "a.txt").read_text() == "first\n" * 50 and not (root / "d.txt").exists()
    assert cli(root, "diff", first, third).returncode == 0
    undo = cli(root, "undo", "--session", "S", "--yes")
    assert undo.returncode == 0, undo.stderr


def test_cutting_only_the_trailer_loses_nothing(tree_factory):
    root, first, second = two_states(tree_factory)
    pack = newest_pack(root)
    os.truncate(pack, pack.stat().st_size - 5)
    ok(cli(root, "snapshot"))
    assert cli(root, "verify").returncode == 0   # every record was salvaged


def test_a_damaged_object_met_by_a_reader_is_written_again_by_the_next_snapshot(
        tree_factory, tree_id):
    root, first, second = two_states(tree_factory)
    pack, record = record_of(root, first, "b.txt")     # b.txt never changed
    flip(Path(pack.pack_path), record.offset + record.length - 4)

    bad = cli(root, "verify", first)          # a reader meets the damage: it is recorded
    assert bad.returncode == 3 and "b.txt" in bad.stdout
    now = ok(cli(root, "snapshot"))

    assert now == tree_id(root)
    every_object_checks(root, now)
    every_object_checks(root, first)   # the fresh copy serves the old snapshot too


def test_a_flipped_byte_in_a_tree_record_is_never_reused_by_the_stat_cache(tree_factory,
                                                                           tree_id):
    root, first, second = two_states(tree_factory)
    with Workspace(root) as ws:
        sub = next(s for m, n, s in ws.store.read_tree(bytes.fromhex(second))
                   if m == MODE_TREE and n == b"sub")
    with ObjectReader(str(pack_dir(root))) as reader:
        pack, record = reader.record_of(sub)
    flip(Path(pack.pack_path), record.offset + record.length - 3)
    assert cli(root, "verify").returncode == 3

    now = ok(cli(root, "snapshot"))

    assert now == second == tree_id(root)
    every_object_checks(root, now)


def test_a_damaged_stat_cache_is_discarded(tree_factory, tree_id):
    root, first, second = two_states(tree_factory)
    cache = Path(default_store_path(str(root))) / "cache" / "statcache"
    flip(cache, cache.stat().st_size // 2)
    (root / "b.txt").write_text("changed\n")
    assert ok(cli(root, "snapshot")) == tree_id(root)


# --- 2. gc deletes only what it copied or proved unreachable ------------------------------------


def test_gc_reindexes_an_index_less_pack_and_keeps_it(tree_factory, git):
    root, first, second = two_states(tree_factory)
    oldest = min(pack_dir(root).glob("pack-*.idx"), key=lambda p: p.stat().st_mtime_ns)
    oldest.unlink()

    gc = cli(root, "gc", "--grace", "0")

    assert gc.returncode == 0, gc.stderr
    assert "missing" not in gc.stderr
    every_object_checks(root, first)
    result = subprocess.run([git.exe, "fsck", "--no-dangling"], capture_output=True,
                            env={**os.environ, "GIT_DIR": str(pack_dir(root).parent.parent)})
    assert b"missing" not in result.stdout + result.stderr


def test_gc_heals_an_index_with_a_flipped_id_and_drops_no_record(tree_factory):
    root, first, second = two_states(tree_factory)
    oldest = min(pack_dir(root).glob("pack-*.idx"), key=lambda p: p.stat().st_mtime_ns)
    flip(oldest, 8 + 256 * 4 + 3)   # inside the first listed id

    assert cli(root, "gc", "--grace", "0").returncode == 0

    every_object_checks(root, first)
    every_object_checks(root, second)


def test_gc_keeps_a_pack_whose_record_fails_its_crc_and_says_what_to_do(tree_factory):
    root, first, second = two_states(tree_factory)
    pack, record = record_of(root, first, "a.txt")      # only the first snapshot holds it
    flip(Path(pack.pack_path), record.offset + record.length // 2)

    gc = cli(root, "gc", "--grace", "0")

    assert gc.returncode == 0
    assert Path(pack.pack_path).exists() and Path(pack.idx_path).exists()
    one_clear_line_each(gc.stderr)
    assert "verify --repair" in gc.stderr and "drop the sessions" not in gc.stderr


def test_verify_repair_writes_again_what_the_files_hold_and_names_what_is_lost(tree_factory):
    root, first, second = two_states(tree_factory)
    kept, kept_record = record_of(root, first, "b.txt")       # b.txt is still on disk
    flip(Path(kept.pack_path), kept_record.offset + kept_record.length - 4)
    lost, lost_record = record_of(root, first, "a.txt")       # a.txt changed since
    flip(Path(lost.pack_path), lost_record.offset + lost_record.length - 4)

    repair = cli(root, "verify", "--repair")

    assert repair.returncode == 3
    assert [line.split()[2] for line in repair.stdout.splitlines()
            if line.startswith("corrupt") or line.startswith("missing")] == ["a.txt"]
    assert first[:12] in repair.stdout and "lost: 1 snapshots" in repair.stdout
    assert os.listdir(pack_dir(root) / "damaged")
    every_object_checks(root, second)
    again = cli(root, "verify", first)
    assert again.returncode == 3 and "b.txt" not in again.stdout


# --- 3. a damaged session journal keeps its history ---------------------------------------------


def test_a_flipped_byte_in_a_journal_then_gc_loses_no_history(tree_factory):
    root = tree_factory({"a.txt": "v0\n"})
    ids = []
    for version in ("v1", "v2", "v3"):
        (root / "a.txt").write_text(version + "\n")
        ids.append(ok(cli(root, "snapshot", "--session", "S", "--label", version)))
    journal = Path(default_store_path(str(root))) / "sessions" / "%53.journal"
    flip(journal, 60)

    gc = cli(root, "gc", "--grace", "0")
    log = cli(root, "log", "--session", "S")
    verify = cli(root, "verify")

    assert gc.returncode == 0 and log.returncode == 0 and verify.returncode == 0
    assert [line.split()[2] for line in log.stdout.splitlines()] == [i[:12] for i in
                                                                      reversed(ids)]
    for result in (log, verify, cli(root, "sessions"), cli(root, "status")):
        one_clear_line_each(result.stderr)
        assert "damaged" in result.stderr and "verify --repair" in result.stderr
        assert "drop --session S" in result.stderr
    for snapshot in ids:
        every_object_checks(root, snapshot)
    # Accepting the salvage ends the warning; the history is all there.
    repaired = cli(root, "verify", "--repair")
    assert repaired.returncode == 0 and "salvaged journal kept" in repaired.stdout
    assert cli(root, "log", "--session", "S").stderr == ""
    assert ok(cli(root, "undo", "--session", "S", "--yes", "--json"))


# --- 4. one store, one root -----------------------------------------------------------------------


def test_a_store_of_another_root_is_refused_and_rebind_re_points_it(tree_factory, tmp_path):
    store = str(tmp_path / "shared-store")
    one = tree_factory({"main.py": "one\n"})
    two = tree_factory({"main.py": "two\n", "notes.txt": "keep me\n"})
    ok(cli(one, "snapshot", "--session", "agent", store=store))
    (one / "main.py").write_text("one, edited\n")
    ok(cli(one, "snapshot", "--session", "agent", store=store))

    for args in (("undo", "--session", "agent", "--yes"), ("snapshot",), ("log",), ("gc",)):
        refused = cli(two, *args, store=store)
        assert refused.returncode == 2, args
        assert str(one) in refused.stderr and str(two) in refused.stderr
        one_clear_line_each(refused.stderr)
    assert files_of(two) == {"main.py": b"two\n", "notes.txt": b"keep me\n"}

    moved = tmp_path / "moved"
    one.rename(moved)
    assert cli(moved, "log", "--session", "agent", store=store).returncode == 2
    ok(cli(moved, "rebind", store=store))
    assert len(ok(cli(moved, "log", "--session", "agent", store=store)).splitlines()) == 2


# --- 5. no temp file survives ---------------------------------------------------------------------


def test_abort_with_a_damaged_restore_journal_removes_every_temp_file(tree_factory, tree_id):
    root, first, second = two_states(tree_factory)
    for folder in (root, root / "sub"):
        for i in range(8):
            (folder / f".undostore-tmp-r0badc0ffee-{i}").write_bytes(b"half a file")
    journal = Path(default_store_path(str(root))) / "restore" / "journal"
    journal.write_bytes(b"not a journal")

    blocked = cli(root, "snapshot")
    assert blocked.returncode == 3 and "restore --abort" in blocked.stderr
    abort = cli(root, "restore", "--abort")

    assert abort.returncode == 0, abort.stderr
    assert not list(root.rglob(".undostore-tmp*"))
    (root / ".undostore-tmp-rfeed-1").write_bytes(b"x")
    snap = cli(root, "snapshot")
    assert snap.returncode == 0 and ".undostore-tmp-rfeed-1" in snap.stderr
    (root / ".undostore-tmp-rfeed-1").unlink()
    assert snap.stdout.strip() == tree_id(root)


def test_an_intact_object_of_another_type_is_refused_but_not_recorded_as_damage(tree_factory):
    root = tree_factory({"a.txt": "text\n"})
    with Workspace(root) as ws:
        snapshot = ws.snapshot().id
        blob = next(s for _p, _m, s in ws.store.iter_tree_files(bytes.fromhex(snapshot)))
        with pytest.raises(IncompleteSnapshotError, match="expected a tree"):
            ws.store.index.read_tree_body(blob)
        assert ws.store.damaged_copies() == set() and ws.store.has(blob)


def test_an_index_less_cut_pack_has_its_whole_records_copied_out_before_it_moves_aside(
        tree_factory):
    root, first, second = two_states(tree_factory)
    pack = newest_pack(root)
    with ObjectReader(str(pack_dir(root))) as reader:
        listed = len(reader.packs[str(pack)[:-5]].index.name_list())
    Path(str(pack)[:-5] + ".idx").unlink()
    os.truncate(pack, pack.stat().st_size - 40)    # the last record and the trailer

    gc = cli(root, "gc", "--grace", "0", "--json")

    assert gc.returncode == 0, gc.stderr
    healed = json.loads(gc.stdout)["healed_packs"]
    assert len(healed) == 1 and "moved to" in healed[0]
    saved = int(healed[0].split("(")[1].split()[0])
    assert 0 < saved < listed
    every_object_checks(root, first)
    assert os.listdir(pack_dir(root) / "damaged")


@pytest.mark.skipif(sys.platform == "win32", reason="no watchman on Windows")
def test_an_undostore_temp_file_is_never_captured_through_watchman(tmp_path, watchman_env):
    root = tmp_path / "root"
    (root / "sub").mkdir(parents=True)
    (root / "a.txt").write_text("a\n")
    (root / "sub" / "b.txt").write_text("b\n")
    time.sleep(0.2)   # past the racy window: the cache keeps them, so watchman's patch path runs
    warnings: list[tuple[str, str]] = []
    with Workspace(root, store=tmp_path / "store") as ws:
        def snap():  # noqa: ANN202
            return ws.snapshot(options=SnapshotOptions(
                on_warning=lambda p, m: warnings.append((p, m))))

        first = snap()
        expect_watchman(snap())
        (root / "sub" / ".undostore-tmp-rbeef-1").write_bytes(b"half a file")
        (root / "sub" / "b.txt").write_text("b, edited\n")
        third = snap()
    expect_watchman(third)
    assert third.id != first.id
    (root / "sub" / ".undostore-tmp-rbeef-1").unlink()
    with Workspace(root, store=tmp_path / "plain") as plain:
        os.environ["UNDOSTORE_FSMONITOR"] = "off"
        assert plain.snapshot().id == third.id
    assert ("sub/.undostore-tmp-rbeef-1", "skipped: an undostore temp file") in warnings
