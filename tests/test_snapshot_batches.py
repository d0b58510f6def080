"""A snapshot hashes files as the walk hands them over, in batches, and saves its stat cache in
parts (the first snapshot's memory): with tiny batches and parts the ids stay git's, the mode
record keeps what differs, and the next snapshot reads nothing again."""

from __future__ import annotations

import errno
import marshal
import os
import time
from pathlib import Path

import pytest

import undostore.snapshot.hashing as hashing
import undostore.store.statcache as statcache
from undostore import Workspace
from undostore.limits import Limits
from undostore.snapshot.snapshot import SnapshotOptions
from undostore.store.framing import read_framed, write_framed_parts
from undostore.store.moderecord import load as load_modes
from undostore.store.statcache import Record, StatCache

from .conftest import IS_WINDOWS, Exe, make_tree

RACY_S = 0.2
# Batches of 5 files (tasks of 2 on a pool) and a stat cache saved 3 folders a part.
TINY = Limits(hash_batch_files=5, pool_task_files=2, cache_part_folders=3)


def _tree(root: Path) -> Path:
    spec: dict = {f"d{i}": {f"f{j}.c": f"int f{i}_{j};\n" if j % 4 else "shared\n"
                            for j in range(9)} for i in range(14)}
    spec["d3"]["run.sh"] = Exe("#!/bin/sh\n")
    spec["d5"]["deep"] = {"x": "x\n", "y": {"z": "shared\n"}}
    spec[".gitignore"] = "*.o\n"
    spec["d7"]["junk.o"] = "ignored\n"
    made = make_tree(root, spec)
    if not IS_WINDOWS:
        os.chmod(made / "d2" / "f1.c", 0o600)
    time.sleep(RACY_S)   # so every entry of the first snapshot is kept in the cache
    return made


@pytest.mark.parametrize("threads", [1, 4])
def test_tiny_batches_and_parts_give_gits_id_and_a_complete_cache(tmp_path, git, threads):
    root = _tree(tmp_path / "root")
    seen: list[tuple[int, int]] = []
    options = SnapshotOptions(hash_threads=threads, limits=TINY,
                              on_progress=lambda p: seen.append((p.files_done, p.files_total)))
    with Workspace(root, store=tmp_path / "store") as ws:
        first = ws.snapshot(options=options)
        assert first.id == git.write_tree(root)
        assert first.hashed == first.files == 14 * 9 + 1 + 3
        assert seen[-1] == (first.files, first.files)
        loaded = StatCache.load(ws.store.stat_cache_path, ws.store.identity)
        assert len(loaded.records) == 17      # the root, 14 folders, deep/ and deep/y/
        again = ws.snapshot(options=SnapshotOptions(hash_threads=threads, limits=TINY))
        assert (again.id, again.hashed) == (first.id, 0)
        if not IS_WINDOWS:
            modes = load_modes(ws.store.path, first.id)
            assert modes is not None
            assert modes.files["d2/f1.c"][0] == 0o600
            assert "d2/f2.c" not in modes.files


def test_a_file_failing_in_a_later_batch_fails_the_snapshot_and_leaves_no_pack(tmp_path,
                                                                              monkeypatch):
    """The walk and the hashing interleave: a file that cannot be read in the third batch
    (an I/O error: unlike a file it may not read, which is left out) still fails the whole
    snapshot, with no pack and no cache left from the batches before."""
    root = _tree(tmp_path / "root")
    file_blob = hashing._Hasher._file_blob

    def refusing(self, disk: str):  # noqa: ANN001, ANN202 (a failing disk: EIO)
        if disk.endswith("f3.c") and "d9" in disk:
            raise OSError(errno.EIO, "Input/output error", disk)
        return file_blob(self, disk)

    monkeypatch.setattr(hashing._Hasher, "_file_blob", refusing)
    with Workspace(root, store=tmp_path / "store", limits=TINY) as ws:
        with pytest.raises(Exception, match="f3.c"):
            ws.snapshot()
        packs = [n for n in os.listdir(ws.store.pack_dir) if n.endswith(".pack")]
        assert packs == []
        assert not os.path.exists(ws.store.stat_cache_path)


def test_parts_round_trip_and_a_bad_part_empties_the_cache(tmp_path):
    path = str(tmp_path / "frame")
    digest = write_framed_parts(path, b"TEST", [b"ab", b"", b"cde" * 1000])
    assert read_framed(path, b"TEST") == b"ab" + b"cde" * 1000
    assert isinstance(digest, int)
    records = {f"d{i}": Record(b"t" * 20, f"n{i}", None, b"") for i in range(40)}
    cache_path = str(tmp_path / "statcache")
    cache = StatCache(identity="me")
    cache.save_records(cache_path, records, 40)
    assert StatCache.load(cache_path, "me").records == records
    head = statcache._encode((statcache._VERSION, "me", (), None, 40), records, 3)
    parts = list(head)
    parts[-1] = parts[-1][:-3]           # a part shorter than its length says
    write_framed_parts(cache_path, b"STAT", parts)
    assert StatCache.load(cache_path, "me").records == {}


def test_a_record_of_another_shape_empties_the_cache(tmp_path):
    """A saved record is a plain tuple of 6 items (4 where saved before records were named
    and without a listing part); one of any other shape (a hand-edited or hostile file)
    discards the whole cache: nothing is trusted from it, and the snapshot hashes every file
    (correct, only slower)."""
    cache_path = str(tmp_path / "statcache")
    good = tuple(Record(b"t" * 20, "n", None, b""))

    def saved(records: dict) -> None:
        chunks = [marshal.dumps((statcache._VERSION, "me", (), None, 1)), marshal.dumps(records)]
        write_framed_parts(cache_path, b"STAT",
                           [part for chunk in chunks
                            for part in (statcache._LENGTH.pack(len(chunk)), chunk)])

    saved({"d": good, "e": good[:4]})    # a record saved with no listing part: 4 items
    assert StatCache.load(cache_path, "me").records == {"d": Record(*good),
                                                        "e": Record(*good[:4])}
    for bad in (good[:3], (*good, b"extra"), list(good), "not a record"):
        saved({"d": good, "e": bad})
        assert StatCache.load(cache_path, "me").records == {}, bad
