"""Power cuts around what the store keeps: the first snapshot into a new store, later
snapshots, session journals and the operation log, gc and `verify --repair`, on the power-cut
file system (tests/powercut/). After each cut: `verify` passes, every id reported done before
the cut restores to exactly its files, and the next command works.
"""

from __future__ import annotations

import os
import random

import pytest

from tests.powercut.fixture import powercut  # noqa: F401 (fixture)
from tests.powercut.rig import Rig

from .conftest import make_tree

MODELS = ["ordered", "strict"]
SEED = 27


def _tree(n: int) -> dict:
    return {"a": f"a{n}\n", "sub": {f"f{i}": f"{n}.{i}\n" * (i + 1) for i in range(8)},
            f"only{n}": "x"}


def _restores_exactly(rig: Rig, snap: str, files: dict) -> None:
    rig.cli("restore", snap, "--yes")
    assert rig.files() == files


@pytest.mark.parametrize("model", MODELS)
def test_the_first_snapshot_into_a_new_store_survives_a_cut(powercut, tmp_path, model):  # noqa: F811
    """Gap 3 of issue 27: the store's folders were made without an fsync of their parent, so
    under the strict model a cut right after the first `snapshot --session` lost the store."""
    rig = Rig(powercut(model), tmp_path)
    make_tree(rig.root, _tree(1))
    rig.settle()   # the user's files are on the disk; the store is new
    snap = rig.json("snapshot", "--session", "s")["id"]
    rig.cut()
    assert rig.json("verify")["ok"]
    assert [p["id"] for p in rig.json("log", "--session", "s")["undo"]] == [snap]
    files = rig.files()
    make_tree(rig.root, _tree(2))
    _restores_exactly(rig, snap, files)


@pytest.mark.parametrize("model", MODELS)
def test_snapshots_sessions_and_the_op_log_survive_cuts(powercut, tmp_path, model):  # noqa: F811
    rig = Rig(powercut(model), tmp_path)
    done: list[tuple[str, dict]] = []
    for n in range(1, 4):
        make_tree(rig.root, _tree(n))
        os.unlink(os.path.join(rig.root, f"only{n - 1}")) if n > 1 else None
        done.append((rig.json("snapshot", "--session", "s")["id"], rig.files()))
    make_tree(rig.root, {"plain": "p"})
    plain = rig.json("snapshot")["id"]
    plain_files = rig.files()
    rig.cut()   # right after they returned: the files were never synced, the store was
    assert rig.json("verify")["ok"]
    assert [p["id"] for p in reversed(rig.json("log", "--session", "s")["undo"])] == [
        snap for snap, _ in done]
    logged = {op["id"] for op in rig.json("ops")["ops"]}
    assert {snap for snap, _ in done} | {plain} <= logged
    for snap, files in done:
        _restores_exactly(rig, snap[:12], files)   # the 12-hex form `log` and `ops` show
    _restores_exactly(rig, plain[:12], plain_files)
    # random cuts during a snapshot of a change: the earlier ids stay, the store stays whole
    rig.settle()
    make_tree(rig.root, _tree(9))
    rig.settle()
    start = rig.fs.events()
    rig.cli("snapshot", "--session", "s")
    total = rig.fs.events() - start
    make_tree(rig.root, _tree(10))
    rig.settle()
    for k in sorted(random.Random(SEED).sample(range(1, total), min(2, total - 1))):
        rig.fs.arm(rig.fs.events() + k)
        rig.cli("snapshot", "--session", "s")
        rig.cut()
        assert rig.json("verify")["ok"]
        points = [p["id"] for p in reversed(rig.json("log", "--session", "s")["undo"])]
        assert points[:4] == [snap for snap, _ in done] + [points[3]]
        again = rig.files()
        _restores_exactly(rig, rig.json("snapshot", "--session", "s")["id"], again)
    for snap, files in done:
        _restores_exactly(rig, snap, files)


@pytest.mark.parametrize("model", MODELS)
def test_gc_and_verify_repair_cut_at_random_keep_every_kept_id(powercut, tmp_path, model):  # noqa: F811
    rig = Rig(powercut(model), tmp_path)
    kept: list[tuple[str, dict]] = []
    for n in range(1, 4):
        make_tree(rig.root, _tree(n))
        kept.append((rig.json("snapshot", "--session", "keep")["id"], rig.files()))
        make_tree(rig.root, {"junk": {f"j{i}": f"junk {n} {i}" for i in range(6)}})
        rig.cli("snapshot", "--session", "junk")
        rig.cli("snapshot", "--session", "junk2")
    rig.cli("drop", "--session", "junk")
    make_tree(rig.root, {"victim": "v"})
    rig.cli("snapshot", "--session", "victim")   # its journal is damaged below
    rig.settle()
    start = rig.fs.events()
    rig.cli("gc", "--grace", "0")
    total = rig.fs.events() - start
    rig.cut()   # gc returned: it lost nothing kept
    assert rig.json("verify")["ok"]
    for k in sorted(random.Random(SEED).sample(range(1, total), min(2, total - 1))) if (
            total > 1) else []:
        rig.cli("drop", "--session", "junk2", ok=False)
        rig.cli("snapshot", "--session", "junk3")
        rig.cli("drop", "--session", "junk3")
        rig.settle()
        rig.fs.arm(rig.fs.events() + k)
        rig.cli("gc", "--grace", "0")
        rig.cut()
        assert rig.json("verify")["ok"]
        rig.cli("gc", "--grace", "0")   # the next gc finishes the job
        assert rig.json("verify")["ok"]
    # verify --repair over a damaged session journal, cut at random
    for k in (1, 2, 0):
        make_tree(rig.root, {"victim": f"v{k}"})
        rig.cli("snapshot", "--session", "victim")   # a journal again, if repair set it aside
        rig.settle()
        journal = next(os.path.join(folder, name)
                       for folder, _, names in os.walk(rig.home) if folder.endswith("sessions")
                       for name in sorted(names) if name.startswith("victim"))
        with open(journal, "r+b") as f:
            f.seek(5)
            f.write(b"\xff\xfe damaged")
            f.flush()
            os.fsync(f.fileno())
        if k:
            rig.fs.arm(rig.fs.events() + k)
        rig.cli("verify", "--repair", ok=False)
        rig.cut()
        rig.cli("verify", "--repair", ok=False)   # the next repair finishes
        assert rig.json("verify")["ok"]
    for snap, files in kept:
        _restores_exactly(rig, snap, files)
