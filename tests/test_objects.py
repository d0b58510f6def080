"""Packs written by undostore are valid git packs: dulwich reads them, git verifies them."""

from __future__ import annotations

import hashlib
import os
import random
import subprocess

import pytest
from dulwich.object_format import SHA1
from dulwich.pack import load_pack_index
from hypothesis import given, settings
from hypothesis import strategies as st

from undostore.errors import IncompleteSnapshotError
from undostore.git.objects import BLOB, TREE, encode_tree, hash_object
from undostore.git.packindex import (
    IndexEntries,
    PackIndexFile,
    encode_pack_index,
    write_pack_index,
)
from undostore.git.packwriter import PackWriter
from undostore.store.store import Store


def _write_pack(pack_dir, objects):
    writer = PackWriter(str(pack_dir))
    for type_num, data in objects:
        writer.add(type_num, hash_object(type_num, data), data)
    return writer.commit()


def test_pack_index_matches_dulwich_reader(tmp_path):
    blobs = [(BLOB, b"content %d\n" % i * (i % 7 + 1)) for i in range(300)]
    base = _write_pack(tmp_path, blobs)
    ours = PackIndexFile(base + ".idx")
    theirs = load_pack_index(base + ".idx", SHA1)
    theirs_entries = {sha: (offset, crc) for sha, offset, crc in theirs.iterentries()}
    assert sorted(ours.names()) == sorted(theirs_entries)
    assert len(theirs_entries) == len(blobs)
    for type_num, data in blobs:
        sha = hash_object(type_num, data)
        assert sha in ours
        assert theirs_entries[sha][0] >= 12
    assert hashlib.sha1(b"absent").digest() not in ours


def test_store_reads_back_every_object_hash_checked(tmp_path):
    store = Store(str(tmp_path / "store"))
    blob = b"hello\n"
    tree = encode_tree([(0o100644, b"hello.txt", hash_object(BLOB, blob))])
    _write_pack(store.pack_dir, [(BLOB, blob), (TREE, tree)])
    store.refresh()
    assert store.read_blob(hash_object(BLOB, blob)) == blob
    assert store.read_tree(hash_object(TREE, tree)) == [
        (0o100644, b"hello.txt", hash_object(BLOB, blob))]


def test_large_offsets_use_the_64_bit_table():
    entries = [(b"\x01" * 20, 12, 0), (b"\x02" * 20, 3 << 31, 0)]
    idx = encode_pack_index(entries, b"\x00" * 20)
    assert idx[-20:] == hashlib.sha1(idx[:-20]).digest()
    assert (3 << 31).to_bytes(8, "big") in idx


def test_git_verify_pack_accepts_our_pack(tmp_path, git):
    blobs = [(BLOB, (b"line %d\n" % i) * 50) for i in range(100)] + [(BLOB, b"")]
    base = _write_pack(tmp_path, blobs)
    result = subprocess.run([git.exe, "verify-pack", "-v", base + ".idx"], capture_output=True)
    assert result.returncode == 0, result.stderr
    assert b"ok" in result.stdout


def test_many_objects_and_a_stream_in_between_all_land_once(tmp_path):
    """Small objects are compressed on a second thread, in batches; a streamed object in the
    middle, duplicates and the last partial batch must all end up in the pack exactly once."""
    store = Store(str(tmp_path / "store"))
    writer = PackWriter(store.pack_dir)
    small = [b"object %d\n" % i * (i % 5 + 1) for i in range(1000)]
    for data in small[:500]:
        writer.add(BLOB, hash_object(BLOB, data), data)
    big = b"x" * (3 << 20)
    writer.add_stream(BLOB, hash_object(BLOB, big), len(big), [big[:1 << 20], big[1 << 20:]])
    for data in small[400:]:                       # 100 duplicates, then 500 new ones
        writer.add(BLOB, hash_object(BLOB, data), data)
    base = writer.commit()
    index = PackIndexFile(base + ".idx")
    assert index.count == 1001
    index.close()
    store.refresh()
    for data in (*small, big):
        assert store.read_blob(hash_object(BLOB, data)) == data
    store.close()


def test_aborted_pack_leaves_nothing_behind(tmp_path):
    pack_dir = tmp_path / "pack"
    writer = PackWriter(str(pack_dir))
    for i in range(300):
        data = b"%d" % i
        writer.add(BLOB, hash_object(BLOB, data), data)
    writer.abort()
    assert os.listdir(pack_dir) == []


def test_objects_spread_over_many_packs_are_all_found_in_any_order_of_lookups(tmp_path):
    """Lookups try the pack that last held an object first: whatever order they come in, each
    object is found, absent ones are not, and a pack gone or set aside is never tried again."""
    from undostore.git.reader import ObjectReader

    pack_dir = tmp_path / "pack"
    pack_dir.mkdir()
    packs = [[b"pack %d object %d\n" % (p, i) for i in range(20)] for p in range(12)]
    bases = [_write_pack(pack_dir, [(BLOB, data) for data in blobs]) for blobs in packs]
    reader = ObjectReader(str(pack_dir))
    everything = [data for blobs in packs for data in blobs]
    for data in everything + everything[::-1] + everything[::7]:
        assert reader.read_blob(hash_object(BLOB, data)) == data
    assert hashlib.sha1(b"absent").digest() not in reader
    reader.verify_blobs([hash_object(BLOB, d) for d in everything])   # every record intact
    last = hash_object(BLOB, packs[5][3])
    assert reader.read_blob(last) == packs[5][3]     # pack 5 is tried first now
    reader.set_aside(bases[5], "a test set it aside")
    assert last not in reader and hash_object(BLOB, packs[4][0]) in reader
    reader.packs[bases[4]].close()   # as gc in another process deletes it (Windows cannot
    for suffix in (".pack", ".idx"):  # delete a file this process still maps)
        os.unlink(bases[4] + suffix)
    reader.refresh()
    assert hash_object(BLOB, packs[4][0]) not in reader
    assert reader.read_blob(hash_object(BLOB, packs[11][19])) == packs[11][19]


def _many_packs(tmp_path, packs: int, objects: int):
    pack_dir = tmp_path / "pack"
    pack_dir.mkdir()
    datas = [[b"pack %d object %d\n" % (p, i) for i in range(objects)] for p in range(packs)]
    for blobs in datas:
        _write_pack(pack_dir, [(BLOB, data) for data in blobs])
    return str(pack_dir), datas


def test_lookups_try_the_pack_that_last_held_an_object_first(tmp_path, monkeypatch):
    from undostore.git.reader import ObjectReader

    pack_dir, datas = _many_packs(tmp_path, 30, 5)
    reader = ObjectReader(pack_dir)
    assert hash_object(BLOB, datas[17][0]) in reader
    tried: list[PackIndexFile] = []
    original = PackIndexFile.position

    def counted(index, sha):
        tried.append(index)
        return original(index, sha)

    monkeypatch.setattr(PackIndexFile, "position", counted)
    for data in datas[17][1:]:
        tried.clear()
        assert hash_object(BLOB, data) in reader
        assert len(tried) == 1           # its pack first: one index looked at, not up to 30


def test_threads_sharing_a_reader_find_every_object_while_the_order_changes(tmp_path):
    """A snapshot's hashing threads ask one reader at once; each lookup must see every pack
    however the others reorder them (with a 1 us switch interval the race shows at once)."""
    import sys
    import threading

    from undostore.git.reader import ObjectReader

    pack_dir, datas = _many_packs(tmp_path, 40, 10)
    reader = ObjectReader(pack_dir)
    shas = [hash_object(BLOB, data) for blobs in datas for data in blobs]
    missed: list[bytes] = []
    errors: list[BaseException] = []

    def ask(seed: int) -> None:
        try:
            for i in range(8000):
                sha = shas[(i * 37 + seed * 101) % len(shas)]
                if sha not in reader:
                    missed.append(sha)
        except BaseException as err:  # noqa: BLE001 - reported below
            errors.append(err)

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        threads = [threading.Thread(target=ask, args=(n,)) for n in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        sys.setswitchinterval(interval)
    assert errors == [] and missed == []


@settings(max_examples=60, deadline=None)
@given(st.lists(st.binary(min_size=20, max_size=20), max_size=3000),
       st.lists(st.binary(min_size=20, max_size=20), max_size=200))
def test_index_entries_answer_membership_as_a_set_would(added, probes):
    """The packed entries' bit filter grows as ids come (from 4 KiB): no id added is ever
    missed, none absent is ever found (ids crafted to collide in a bucket included)."""
    entries = IndexEntries()
    kept: set[bytes] = set()
    for i, sha in enumerate(added):
        if sha not in kept:
            entries.add(sha, 12 + i, i)
            kept.add(sha)
    assert len(entries) == len(kept)
    for sha in [*added, *probes, *(bytes([s[0]]) + s[1:19] + b"\0" for s in added)]:
        assert (sha in entries) == (sha in kept)


def test_index_of_packed_entries_equals_dulwichs_index(tmp_path):
    """Our index writer, fed from the packed buckets, gives byte for byte the index dulwich
    writes for the same (id, offset, crc) entries, 64-bit offsets included."""
    from dulwich.pack import write_pack_index_v2

    rng = random.Random(7)
    entries = [(rng.randbytes(20), 12 + 97 * i + (3 << 31 if i % 500 == 0 else 0),
                rng.getrandbits(32)) for i in range(20_000)]
    with open(tmp_path / "theirs.idx", "wb") as f:
        write_pack_index_v2(f, sorted(entries), b"\x07" * 20)
    with open(tmp_path / "ours.idx", "wb") as f:
        write_pack_index(f, IndexEntries(entries), b"\x07" * 20)
    assert (tmp_path / "ours.idx").read_bytes() == (tmp_path / "theirs.idx").read_bytes()
    assert encode_pack_index(entries, b"\x07" * 20) == (tmp_path / "ours.idx").read_bytes()


def test_a_pack_bigger_than_the_first_filter_holds_each_object_once(tmp_path):
    """8,000 objects (the filter grows three times while the worker thread writes) with every
    tenth added twice, some while still queued: the pack lists each exactly once."""
    store = Store(str(tmp_path / "store"))
    writer = PackWriter(store.pack_dir)
    blobs = [b"blob %d\n" % i for i in range(8000)]
    for i, data in enumerate(blobs):
        writer.add(BLOB, hash_object(BLOB, data), data)
        if i % 10 == 0:
            writer.add(BLOB, hash_object(BLOB, blobs[i // 2]), blobs[i // 2])
    assert len(writer) == 8000
    base = writer.commit()
    index = PackIndexFile(base + ".idx")
    assert index.count == 8000 and len(set(index.names())) == 8000
    index.close()
    store.refresh()
    assert all(store.read_blob(hash_object(BLOB, data)) == data for data in blobs[::97])
    store.close()


def test_a_pack_that_lets_its_pages_go_after_every_read_still_reads_every_object(tmp_path):
    """Pages of a pack mapping are given back every `release_after` bytes read (a restore of a
    big pack would hold it all resident): with the threshold at one byte, every read refaults
    its pages and still returns, checks and verifies the right bytes."""
    from undostore.git.reader import ObjectReader

    blobs = [os.urandom(100 + 997 * i) for i in range(40)] + [b"z" * (3 << 20)]
    _write_pack(tmp_path, [(BLOB, data) for data in blobs])
    with ObjectReader(str(tmp_path), release_after=1) as reader:
        located = reader.verify_blobs([hash_object(BLOB, data) for data in blobs])
        for data in blobs:
            sha = hash_object(BLOB, data)
            assert reader.read_blob(sha) == data
            assert b"".join(reader.blob_chunks(sha)) == data
            # Read again where the check found it: the same bytes, nothing looked up.
            assert b"".join(reader.blob_chunks(sha, located[sha])) == data
            small = reader.small_blob(sha, located[sha])
            assert small == (data if len(data) <= (1 << 20) else None)


def test_verify_blobs_leaves_absent_blobs_out_and_a_set_aside_pack_is_not_read(tmp_path):
    from undostore.git.reader import ObjectReader

    blobs = [b"one\n", b"two\n" * 50]
    base = _write_pack(tmp_path, [(BLOB, data) for data in blobs])
    ids = [hash_object(BLOB, data) for data in blobs]
    with ObjectReader(str(tmp_path)) as reader:
        located = reader.verify_blobs([*ids, hash_object(BLOB, b"absent")])
        assert sorted(located) == sorted(ids)
        assert [located[sha].size for sha in ids] == [len(data) for data in blobs]
        reader.set_aside(base, "found damaged")
        with pytest.raises(IncompleteSnapshotError):   # its only pack is gone: missing now
            b"".join(reader.blob_chunks(ids[0], located[ids[0]]))
        assert reader.small_blob(ids[1], located[ids[1]]) is None


def _resident_kb(path: str) -> int:
    """Resident kilobytes of this process's mappings of `path` (Linux's smaps)."""
    total, inside = 0, False
    with open("/proc/self/smaps", encoding="utf-8") as f:
        for line in f:
            head = line.split()
            if head and "-" in head[0] and ":" not in head[0]:
                inside = len(head) >= 6 and head[5] == path
            elif inside and line.startswith("Rss:"):
                total += int(head[1])
    return total


@pytest.mark.skipif(not os.path.exists("/proc/self/smaps"), reason="needs Linux's smaps")
def test_small_reads_scattered_over_a_big_pack_keep_little_of_it_resident(tmp_path):
    """A page fault maps the pages around it too, so reads are counted at 64 KB at least:
    1,000 small blobs read across a 16 MB pack keep about `release_after` of it resident,
    not the whole pack."""
    from undostore.git.reader import ObjectReader

    rng = random.Random(5)
    blobs = [rng.randbytes(4096) for _ in range(4_000)]   # incompressible: 16 MB of pack
    base = _write_pack(tmp_path, [(BLOB, data) for data in blobs])
    picked = [hash_object(BLOB, data) for data in blobs[::4]]
    with ObjectReader(str(tmp_path), release_after=1 << 20) as reader:
        reader.verify_blobs(picked)
        for sha in picked:
            assert len(reader.read_blob(sha)) == 4096
        resident = _resident_kb(base + ".pack")
        assert resident < 2560, resident
