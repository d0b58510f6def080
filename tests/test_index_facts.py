"""What a call learned of the store's pack indexes (their checksums held, where each's last
record starts), handed on by the resident process to the calls it forks next
(git/packindex.py `index_facts`, `adopt_index_facts`; cli/resident/serve.py `told`): taken
only for index files still there unchanged, and never more than a pipe holds."""

from __future__ import annotations

import json
import os
import types

import pytest
from undostore_cli.resident import serve

from undostore import Workspace, adopt_index_facts, index_facts
from undostore.git import packindex
from undostore.git.packfile import complete_packs
from undostore.git.reader import ObjectReader


@pytest.fixture
def forgetting():  # noqa: ANN201
    """This process as a fresh call's: nothing learned of any index, before and after."""
    adopt_index_facts([])
    yield
    adopt_index_facts([])


def _store_with_packs(tree_factory) -> tuple[str, list[str]]:  # noqa: ANN001
    root = tree_factory({"a.txt": "1", "src": {"m.py": "x"}})
    with Workspace(root) as ws:
        ws.snapshot()
        for n in range(3):
            (root / "a.txt").write_text(f"version {n}")
            ws.snapshot()
        pack_dir = ws.store.pack_dir
    return pack_dir, complete_packs(pack_dir)


def _no_hashing(*_args: object) -> None:
    raise AssertionError("an index adopted as checked was hashed again")


def test_a_call_that_adopts_what_the_last_learned_checks_no_index_again(tree_factory,
                                                                        forgetting,
                                                                        monkeypatch):
    pack_dir, packs = _store_with_packs(tree_factory)
    assert len(packs) >= 4
    adopt_index_facts([])
    with ObjectReader(pack_dir):
        pass
    facts = index_facts()
    assert sorted(f[0] for f in facts) == sorted(base + ".idx" for base in packs)
    assert all(f[4] is True and f[5] >= 0 for f in facts)
    adopt_index_facts([])   # the next call, forked from a process that knew nothing
    assert adopt_index_facts(json.loads(json.dumps(facts))) == len(packs)
    monkeypatch.setattr(packindex, "hashlib", types.SimpleNamespace(sha1=_no_hashing))
    with ObjectReader(pack_dir) as reader:
        assert not reader.damaged_packs and len(reader.packs) == len(packs)
        for pack in reader.packs.values():
            for position in range(pack.index.count):
                assert reader.read(pack.index.name_at(position)) is not None


def test_a_fact_is_taken_only_for_an_index_still_there_unchanged(tree_factory, forgetting):
    pack_dir, packs = _store_with_packs(tree_factory)
    adopt_index_facts([])
    with ObjectReader(pack_dir):
        pass
    facts = index_facts()
    touched = packs[0] + ".idx"
    st = os.stat(touched)
    os.utime(touched, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))   # any clock
    unchecked = [f for f in facts if f[0] == packs[1] + ".idx"][0]
    unchecked[4] = False    # a checksum that failed is checked again, not taken
    given = facts + [
        ["/nowhere/pack-0.idx", 1, 2, 3, True, 4],   # gone
        ["short"], "not a list", [packs[2] + ".idx", "1", 2, 3, True, 4],   # not well formed
    ]
    kept = adopt_index_facts(given)
    assert kept == len(packs) - 1
    assert not any(key[0] == touched for key in packindex._CHECKED)
    assert not any(key[0] == touched for key in packindex._MAX_OFFSETS)
    assert not any(key[0] == unchecked[0] for key in packindex._CHECKED)
    assert any(key[0] == unchecked[0] for key in packindex._MAX_OFFSETS)
    with ObjectReader(pack_dir) as reader:   # the changed one checked afresh: still sound
        assert not reader.damaged_packs
    assert adopt_index_facts(None) == 0


def test_what_a_child_tells_fits_a_pipe_and_keeps_the_newest_facts(tmp_path):
    cache = [str(tmp_path / "cache" / "stat"), "store-identity"]
    facts = [[f"/{'deep/' * 40}{n}.idx", n, n, n, True, n] for n in range(500)]
    data = serve.told(cache, facts)
    assert 0 < len(data) <= serve.TOLD_BYTES
    told = json.loads(data)
    assert told["stat_cache"] == cache
    assert told["indexes"] and told["indexes"][-1] == facts[-1]
    assert told["indexes"] == facts[-len(told["indexes"]):]
    assert json.loads(serve.told(None, []))["indexes"] == []


@pytest.mark.skipif(os.name == "nt", reason="the resident process runs on Linux and macOS "
                    "(a Windows pipe holds less than a child would write before its reader)")
def test_what_a_child_tells_goes_through_a_pipe_before_its_parent_reads(tmp_path):
    cache = [str(tmp_path / "cache" / "stat"), "store-identity"]
    facts = [[f"/{'deep/' * 40}{n}.idx", n, n, n, True, n] for n in range(500)]
    # As the child writes it (all of it, before anyone reads) and its parent reads it once the
    # child has exited.
    tell_r, tell_w = os.pipe()
    os.write(tell_w, serve.told(cache, facts))
    os.close(tell_w)
    serve._preload(tell_r)   # a cache path that holds no cache is not kept; nothing fails
    with pytest.raises(OSError):
        os.fstat(tell_r)
