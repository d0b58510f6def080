"""The stat cache's per-folder records and its delta file: round trips, and a lost, damaged or
stale delta falling back to the older (still consistent) base."""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

from undostore import Workspace
from undostore.store.statcache import (
    DELTA_SUFFIX,
    ENTRY,
    Entry,
    FolderState,
    StatCache,
    mode_only_entry,
    mode_only_indexes,
)

from .conftest import make_tree

IDENTITY = "store-identity"
RACY_S = 0.2


def entry(n: int) -> Entry:
    return Entry(1_600_000_000_123_456_789 + n, 1_600_000_000_123_456_789, n, 1000 + n, 0o100644,
            0o100644, bytes([n % 256]) * 20)


def test_entries_and_folder_states_round_trip(tmp_path):
    files = {"a": entry(1), "d/b": entry(2), "d/e/c": entry(3), "gone/x": entry(4)}
    folders = {"": FolderState(b"r" * 20, ("a", "d")), "d": FolderState(b"d" * 20, ("b", "e")),
               "d/e": FolderState(b"e" * 20, ("c",)), "empty": FolderState(None, ())}
    path = str(tmp_path / "statcache")
    StatCache(identity=IDENTITY).save(path, files, folders, start_ns=2 * 10**18, fresh=set())
    loaded = StatCache.load(path, IDENTITY)
    assert loaded.files == files
    assert loaded.folders == folders
    assert loaded.root == b"r" * 20
    assert StatCache.load(path, "another store").files == {}


def test_racy_entries_keep_only_their_mode_and_their_folder_state_is_kept(tmp_path):
    """A racy file is hashed again next time, but its mode is remembered (Windows reads the
    exec bit, and a link written as a file, from here)."""
    now = 1_600_000_000_123_456_789 + 10 * 10**9
    files = {"old": entry(0), "fresh": Entry(now, now, 1, 1, 0o100755, 0o100755, b"f" * 20)}
    path = str(tmp_path / "statcache")
    StatCache(identity=IDENTITY).save(path, files, {"": FolderState(b"r" * 20, ("old", "fresh"))},
                                      now)
    loaded = StatCache.load(path, IDENTITY)
    assert loaded.files == {"old": entry(0), "fresh": mode_only_entry(0o100755, b"f" * 20)}
    assert loaded.previous_mode("fresh") == 0o100755
    assert loaded.folders == {"": (b"r" * 20, ("old", "fresh"))}


def test_mode_only_entries_are_found_where_entries_start_only():
    """The byte search that finds racy entries in a big folder's record counts a match only
    where an entry starts: the same bytes straddling two fields of a real entry are no entry."""
    real = ENTRY.pack(*entry(0))
    straddling = ENTRY.pack(5, 0, -(2**32), 0xFFFFFFFF, 0, 0, b"s" * 20)  # the pattern at byte 4
    kept = ENTRY.pack(*mode_only_entry(0o100755, b"k" * 20))
    blob = real + straddling + kept + real + kept
    assert mode_only_indexes(blob) == [2, 4]
    assert mode_only_indexes(real * 3) == []
    assert mode_only_indexes(b"") == []


def _big_tree(root: Path) -> Path:
    made = make_tree(root, {f"d{i}": {f"f{j}": f"{i}/{j}" for j in range(3)} for i in range(80)})
    time.sleep(RACY_S)   # so the first snapshot's entries are all kept
    return made


def test_a_one_file_change_writes_a_delta_and_leaves_the_base(tmp_path, git):
    root = _big_tree(tmp_path / "root")
    store = tmp_path / "store"
    with Workspace(root, store=store) as ws:
        ws.snapshot()
        base = Path(ws.store.cache_dir) / "statcache"
        before = base.stat()
        (root / "d7" / "f1").write_text("changed")
        time.sleep(RACY_S)   # else the entry is racy and left out
        second = ws.snapshot()
        assert second.id == git.write_tree(root)
        after = base.stat()
        assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)
        assert os.path.exists(str(base) + DELTA_SUFFIX)
        merged = StatCache.load(str(base), ws.store.identity)
        assert merged.entries_in("d7")["f1"][2] == len("changed")
        # Nothing changed: the delta is read back and nothing is hashed.
        assert ws.snapshot().hashed == 0


def test_a_damaged_or_stale_delta_falls_back_to_the_base(tmp_path, git):
    root = _big_tree(tmp_path / "root")
    store = tmp_path / "store"
    with Workspace(root, store=store) as ws:
        ws.snapshot()
        base = Path(ws.store.cache_dir) / "statcache"
        (root / "d3" / "f0").write_text("one")
        time.sleep(RACY_S)
        ws.snapshot()
        delta = Path(str(base) + DELTA_SUFFIX)
        stale = tmp_path / "stale-delta"
        shutil.copy(delta, stale)
        data = bytearray(delta.read_bytes())
        data[-3] ^= 0xFF
        delta.write_bytes(bytes(data))
        (root / "d3" / "f0").write_text("two")
        result = ws.snapshot()
        assert result.id == git.write_tree(root) and result.hashed == 1
        # A new base (many folders changed), then the old delta put back: it names the old base.
        for i in range(80):
            (root / f"d{i}" / "f2").write_text(f"new {i}")
        time.sleep(RACY_S)
        assert ws.snapshot().id == git.write_tree(root)
        assert not delta.exists()
        shutil.copy(stale, delta)
        assert StatCache.load(str(base), ws.store.identity).entries_in("d3")["f0"].size == 3
        assert ws.snapshot().hashed == 0


def test_the_mode_record_a_restore_leaves_is_kept_by_base_and_delta_alike(tmp_path):
    """`modes` (the record a restore leaves for the next snapshot) is saved in a base and in a
    delta, and a delta without it clears it; a head of the older five items reads as None."""
    path = str(tmp_path / "statcache")
    files = {f"d{i}/f": entry(i) for i in range(200)}
    folders = {"": FolderState(b"r" * 20, tuple(f"d{i}" for i in range(200)))}
    cache = StatCache(identity=IDENTITY)
    cache.save(path, files, folders, start_ns=2 * 10**18, fresh=set())
    assert StatCache.load(path, IDENTITY).modes is None
    cache = StatCache.load(path, IDENTITY)
    cache.modes = b"record after a restore"
    cache.save_records(path, cache.records, 200)             # nothing changed: a delta
    assert os.path.exists(path + DELTA_SUFFIX)
    assert StatCache.load(path, IDENTITY).modes == b"record after a restore"
    cache.modes = None
    cache.save_records(path, cache.records, 200)
    assert StatCache.load(path, IDENTITY).modes is None
    cache.modes = b"once more"
    records = {folder: record._replace(tree_id=False) for folder, record in cache.records.items()}
    cache.save_records(path, records, 200)                   # every folder changed: a base
    assert not os.path.exists(path + DELTA_SUFFIX)
    loaded = StatCache.load(path, IDENTITY)
    assert (loaded.modes, loaded.root, len(loaded.files)) == (b"once more", None, 200)


def test_a_new_base_is_written_one_part_at_a_time(tmp_path, monkeypatch):
    """A base is marshalled `part_folders` folders at a time and each part written before the
    next is made: the whole cache is never held as bytes beside its records (a first snapshot's
    peak memory was its save, docs/design.md)."""
    from undostore.store import statcache

    root = make_tree(tmp_path / "t", {f"d{i}": {"f.txt": str(i)} for i in range(6)})
    with Workspace(root, tmp_path / "store") as ws:
        ws.snapshot()
        cache = StatCache.load(ws.store.stat_cache_path, ws.store.identity)
    made: list[int] = []
    dumps = statcache.marshal.dumps
    monkeypatch.setattr(statcache, "marshal", type("M", (), {
        "dumps": staticmethod(lambda value: made.append(1) or dumps(value)),
        "loads": staticmethod(statcache.marshal.loads)}))
    made_when_written: list[int] = []
    write = statcache.write_framed_parts

    def watched(path, kind, parts, durable=True):
        def each():
            for part in parts:
                made_when_written.append(len(made))
                yield part
        return write(path, kind, each(), durable=durable)

    monkeypatch.setattr(statcache, "write_framed_parts", watched)
    fresh = StatCache(identity=cache.identity)
    fresh.save_records(str(tmp_path / "cache"), cache.records, part_folders=1)
    parts = len(cache.records)   # one marshalled part a folder, then the head
    assert len(made) == parts + 1
    # Each part's length and bytes go out before the next part is marshalled.
    assert made_when_written[:4] == [1, 1, 2, 2]
    assert StatCache.load(str(tmp_path / "cache"), cache.identity).records == cache.records


def test_a_preloaded_cache_serves_loads_only_while_its_files_are_unchanged(tmp_path, monkeypatch):
    """`preload` (the resident process's): a later load of the same files takes a copy of its
    own; once a snapshot saved the cache again, the files on disk are read."""
    from undostore.store import statcache

    monkeypatch.setattr(statcache, "_preloaded", None)
    root = make_tree(tmp_path / "t", {"a.txt": "1", "d": {"b.txt": "2"}})
    with Workspace(root, tmp_path / "store") as ws:
        ws.snapshot()
        path, identity = ws.store.stat_cache_path, ws.store.identity
        assert statcache.preload(path, identity)
        reads: list[str] = []
        real_read = statcache.read_framed_view
        monkeypatch.setattr(statcache, "read_framed_view",
                            lambda p, kind: reads.append(p) or real_read(p, kind))
        first, second = StatCache.load(path, identity), StatCache.load(path, identity)
        assert reads == []
        assert first.records == second.records and first.records is not second.records
        first.records.clear()   # one caller's changes are its own
        assert StatCache.load(path, identity).records == second.records
        assert StatCache.load(path, "another store").records == {}
        reads.clear()
        (root / "d" / "b.txt").write_text("changed")
        changed = ws.snapshot()   # loads the preloaded copy, then saves the cache anew
        assert reads == []
        loaded = StatCache.load(path, identity)
        assert reads == [path]
        assert loaded.root == bytes.fromhex(changed.id)
